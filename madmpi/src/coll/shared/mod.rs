//! Node-local collectives: a blocking barrier, broadcast, reduce or allreduce of at most
//! [`MAX_BYTES`] per member, on an intracommunicator whose members all live on one node, runs
//! through a segment they all map instead of messages (MPICH's ch4 does the same with its
//! "release/gather" shared-memory collectives). A 2-member 8-byte allreduce is then one cache
//! line written by each member and read by the other, where messages cost a send and a receive
//! through the rings and the library's matching on each side.
//!
//! **When.** Every member must take the same path for a call, so the choice depends only on what
//! MPI makes the members agree on: the communicator, the call (blocking; nonblocking and
//! persistent collectives never match blocking ones), its packed byte count (the same
//! everywhere: MPI's type-signature rule), the algorithms forced (`MADMPI_COLL_*`, the same
//! everywhere) and the number of collectives the communicator started. The segment is made at
//! the first such call once the communicator started [`SET_UP_AFTER`] collectives (a
//! communicator used for a few collectives only never pays for a segment), as one collective
//! exchange: the members send rank 0 their node, process and whether nmad's shm driver runs
//! (`NMAD_DRIVERS` without shm asks for no shared memory, as MPICH's `MPIR_CVAR_NOLOCAL`);
//! rank 0 makes the segment if all are on its node and there are at most [`MAX_MEMBERS`],
//! passes its fd, and tells everyone whether all mapped it. The outcome holds for the
//! communicator's life. The C library's general path (derived datatypes) reaches the same
//! choice through `Planned::run`, packing and unpacking around the call, so a member with a
//! derived type and one with a predefined type still meet. `MADMPI_COLL_SHARED=0` turns it off.
//!
//! **Waiting** spins, then sleeps on a futex (see `area`), pioman progressing the rest of the
//! library meanwhile; a member found failed (nmad lost it) or the communicator revoked ends the
//! wait with `MPIX_ERR_PROC_FAILED` / `MPIX_ERR_REVOKED` instead of a hang.
//!
//! Files: `area` (layout, announcements, waits), `calls` (each collective's steps), this one
//! (a communicator's area and its setup, what waiters do meanwhile). The choice per call and
//! the packing of the caller's memory are `coll::node_local`'s, which calls in here. Owns the
//! node-local path; it imports nothing of the collectives' other files (no choice of
//! algorithms, no schedules).

mod area;
mod calls;

pub(crate) use area::{Area, Meanwhile};
pub(crate) use calls::{barrier, bcast, reduce};

use crate::comm::tags::{self, Kind};
use crate::comm::{Comm, Extension};
use crate::error::{Error, ErrorClass, Result};
use crate::node_shm::fdpass::{self, Server};
use crate::node_shm::segment::{Segment, page_rounded};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Bytes per member a call carries at most (packed).
pub(crate) const MAX_BYTES: usize = area::DATA;
/// Members at most (each reads every other's buffer: flat).
const MAX_MEMBERS: u32 = 16;
/// Collectives a communicator starts before its segment is made.
const SET_UP_AFTER: u64 = 4;
/// How often a waiter asks nmad whether a member failed.
const FAILURES_EVERY: Duration = Duration::from_millis(1);

/// The communicator's node-local state (a duplicate starts afresh).
#[derive(Default)]
struct Shared {
    /// Made at the first eligible call after [`SET_UP_AFTER`]: `None` if the members cannot share one.
    area: OnceLock<Option<Area>>,
    /// Calls run through the area.
    calls: AtomicU64,
}

impl Extension for Shared {}

/// Whether the node-local path is on (`MADMPI_COLL_SHARED`, default on).
fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("MADMPI_COLL_SHARED").map_or(true, |v| v != "0"))
}

/// The area of `comm` and the number of this call, for a blocking collective every member runs
/// node-locally if any does (the caller checked what else the choice depends on: see the
/// module docs); `None`: the message path runs it; `Some(Err)`: the setup failed (a member
/// failed during it).
pub(crate) fn call(comm: &Comm) -> Option<Result<(&Area, u64)>> {
    if !enabled() {
        return None;
    }
    let st: &Shared = comm.extensions().get_or_default();
    let area = match st.area.get() {
        Some(a) => a.as_ref()?,
        None => {
            if comm.coll_started() < SET_UP_AFTER {
                return None;
            }
            let made = comm.set_up_area();
            match &made {
                Ok(Some(a)) => log::info!(
                    "collectives: node-local area for the {} ranks of context {:#x}{}",
                    a.members(),
                    comm.context_id(),
                    if a.fenced() { " (fenced publishes)" } else { "" }
                ),
                Ok(None) => {
                    log::info!("collectives: no node-local area for context {:#x}", comm.context_id())
                }
                Err(e) => {
                    log::warn!("collectives: no node-local area for context {:#x}: {e}", comm.context_id())
                }
            }
            let failed = made.as_ref().err().cloned();
            let _ = st.area.set(made.ok().flatten());
            if let Some(e) = failed {
                return Some(Err(e));
            }
            st.area.get()?.as_ref()?
        }
    };
    // Collectives on one communicator are never concurrent (MPI): no read-modify-write.
    let c = st.calls.load(Relaxed) + 1;
    st.calls.store(c, Relaxed);
    Some(Ok((area, c)))
}

/// What a waiter of `comm` does meanwhile: progress, and stop for a failed member or a
/// revocation.
pub(crate) fn watch(comm: &Comm) -> impl Meanwhile + '_ {
    Watch { comm, failures_seen: Instant::now() }
}

impl Comm {
    /// Makes the communicator's area with the other members (a collective exchange: every
    /// member calls it at the same call). `Ok(None)`: the members cannot share one.
    fn set_up_area(&self) -> Result<Option<Area>> {
        let (n, me) = (self.size(), self.rank());
        let seq = self.next_coll_seq();
        let tag = |step| tags::internal(Kind::Collective, seq, step);
        let rt = self.runtime();
        let direct = rt.nm.driver_stats().iter().any(|d| d.name == "shm");
        let card = Card {
            node: rt.node,
            pid: std::process::id(),
            ok: direct && (2..=MAX_MEMBERS).contains(&n),
            asymmetric: area::asymmetric_barriers(),
        };
        let len = page_rounded(area::len(n as usize));
        if me != 0 {
            self.send_to(0, tag(0), &card.encode())?;
            let mut v = [0u8; Verdict::LEN];
            self.recv_exact(0, tag(1), &mut v)?;
            let v = Verdict::decode(&v);
            if !v.go {
                return Ok(None);
            }
            let seg = fdpass::fetch(v.pid, v.nonce).and_then(|fd| Segment::attach(&fd, len));
            if let Err(e) = &seg {
                log::warn!("collectives: no shared area for context {}: {e}", self.context_id());
            }
            self.send_to(0, tag(2), &[u8::from(seg.is_ok())])?;
            let mut all = [0u8];
            self.recv_exact(0, tag(3), &mut all)?;
            return Ok(seg.ok().filter(|_| all[0] == 1).map(|s| Area::new(s, n, me, v.fenced)));
        }
        let mut cards = Vec::with_capacity(n as usize - 1);
        for r in 1..n {
            let mut b = [0u8; Card::LEN];
            self.recv_exact(r, tag(0), &mut b)?;
            cards.push(Card::decode(&b));
        }
        let go = card.ok && cards.iter().all(|c| c.ok && c.node == card.node);
        let fenced = !(card.asymmetric && cards.iter().all(|c| c.asymmetric));
        let made = if go {
            make_segment(len)
        } else {
            Err(format!("{n} ranks, on several nodes or some without nmad's shm driver"))
        };
        if let Err(why) = &made {
            log::info!("collectives: context {:#x} cannot share an area: {why}", self.context_id());
        }
        let verdict = match &made {
            Ok((server, _, _)) => Verdict { go: true, nonce: server.nonce, pid: card.pid, fenced },
            Err(_) => Verdict { go: false, nonce: 0, pid: 0, fenced },
        };
        for r in 1..n {
            self.send_to(r, tag(1), &verdict.encode())?;
        }
        let Ok((server, seg, fd)) = made else { return Ok(None) };
        let pids: Vec<u32> = cards.iter().map(|c| c.pid).collect();
        let served = server.serve(&fd, &pids);
        drop(server);
        let mut all = served.is_ok();
        for r in 1..n {
            let mut b = [0u8];
            self.recv_exact(r, tag(2), &mut b)?;
            all &= b[0] == 1;
        }
        for r in 1..n {
            self.send_to(r, tag(3), &[u8::from(all)])?;
        }
        Ok(all.then(|| Area::new(seg, n, 0, fenced)))
    }
}

/// A segment for the area, and the socket to pass it on.
fn make_segment(len: usize) -> std::result::Result<(Server, Segment, std::os::fd::OwnedFd), String> {
    let server = Server::bind().map_err(|e| e.to_string())?;
    let (seg, fd) = Segment::create(len).map_err(|e| e.to_string())?;
    Ok((server, seg, fd))
}

/// What a member tells rank 0 at setup.
struct Card {
    node: u64,
    pid: u32,
    /// It can share: nmad's shm driver runs, and the communicator's size suits.
    ok: bool,
    /// It is registered for `membarrier` (`area::asymmetric_barriers`).
    asymmetric: bool,
}

impl Card {
    const LEN: usize = 13;

    fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..8].copy_from_slice(&self.node.to_le_bytes());
        b[8..12].copy_from_slice(&self.pid.to_le_bytes());
        b[12] = u8::from(self.ok) | u8::from(self.asymmetric) << 1;
        b
    }

    fn decode(b: &[u8; Self::LEN]) -> Card {
        Card {
            node: u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
            pid: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
            ok: b[12] & 1 != 0,
            asymmetric: b[12] & 2 != 0,
        }
    }
}

/// What rank 0 answers: whether to share, and where to fetch the segment.
struct Verdict {
    go: bool,
    nonce: u64,
    pid: u32,
    /// Publishes fence (a member is not registered for `membarrier`).
    fenced: bool,
}

impl Verdict {
    const LEN: usize = 13;

    fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0] = u8::from(self.go) | u8::from(self.fenced) << 1;
        b[1..9].copy_from_slice(&self.nonce.to_le_bytes());
        b[9..13].copy_from_slice(&self.pid.to_le_bytes());
        b
    }

    fn decode(b: &[u8; Self::LEN]) -> Verdict {
        Verdict {
            go: b[0] & 1 != 0,
            fenced: b[0] & 2 != 0,
            nonce: u64::from_le_bytes(b[1..9].try_into().expect("8 bytes")),
            pid: u32::from_le_bytes(b[9..13].try_into().expect("4 bytes")),
        }
    }
}

/// A waiter's view of the library: progress, failed members, revocation.
struct Watch<'a> {
    comm: &'a Comm,
    failures_seen: Instant,
}

impl area::Meanwhile for Watch<'_> {
    fn look(&mut self) -> Result<()> {
        let rt = self.comm.runtime();
        rt.nm.pioman().progress();
        if self.failures_seen.elapsed() < FAILURES_EVERY {
            return Ok(());
        }
        self.failures_seen = Instant::now();
        if let Some(why) = self.comm.session().revoked() {
            return Err(Error::new(ErrorClass::MpixRevoked, format!("communicator revoked: {why}")));
        }
        let failed = rt.nm.failed_peers();
        if failed.is_empty() {
            return Ok(());
        }
        let group = self.comm.group();
        match (0..self.comm.size()).find(|&r| group.member(r).is_some_and(|w| failed.contains(&w))) {
            Some(r) => Err(Error::new(ErrorClass::MpixProcFailed, format!("collective: rank {r} failed"))),
            None => Ok(()),
        }
    }

    fn shared_cpu(&self) -> bool {
        self.comm.runtime().nm.pioman().machine_state().oversubscribed
    }
}
