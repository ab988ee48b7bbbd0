//! The rendezvous written by the sender: when the receiver's side of a direct transfer would run
//! beside its application's computation (its progression thread, a context switch, a tick, a
//! thread waiting for something else), the receiver exposes the first part of its buffer and sends RTW; the sender, whose thread usually
//! waits in the send, writes that part (`write_remote`, cross-memory attach on shm) and answers
//! WRITTEN, while the receiver reads the rest from the sender's exposed memory and answers FIN.
//! The two copies run at once on the two processes' cores, and the computing one does only its
//! share ([`RdvWrites`]; all of it below [`SPLIT_MIN`]).
//!
//! Why: on this 2-core VM a 1 MiB copy by cross-memory attach takes 85–100 µs repeated
//! back to back but 170–390 µs when the core did something else for 50 ms (caches and TLB
//! cold; a C loop of `process_vm_writev` with 50 ms of other work between), and a progression
//! thread reading the whole message takes that time from the receiver's computation (16 MiB:
//! 2–8 ms lost by a computing receiver, against 0–2 ms when the sender writes; `bgw.c`).
//!
//! Owns both ends of that exchange: [`ask`] (receiver: expose, register, RTW, read its share),
//! [`Gate::on_rtw`] and [`run_writes`] (sender: queue the job, write outside any lock, answer
//! and complete, or fall back to bulk data to the same receive cookie), [`Gate::on_written`]
//! (receiver). Whether to ask is decided by the caller (`deliver::run_reads`, from
//! [`RdvWrites`]); reads stay the rule whenever a thread that waits does the transfer.
//!
//! A receive completed by a failure while its RTW is out keeps nothing the peer could need; a
//! peer that writes after that writes into memory the application owns again, as any process
//! allowed to attach to ours could (the key records intent, not protection).

use super::{Control, Gate, LargeRecv};
use crate::core::Core;
use crate::core::matching::Remote;
use crate::core::request::{Error, ReqPtr};
use crate::drivers::{Access, BulkHeader, Exposed, PeerId, Segment, SegmentMut};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// Below this many bytes the sender writes everything (a second answer would cost more than
/// the share it saves).
pub(crate) const SPLIT_MIN: u64 = 256 << 10;
/// Shares are cut at page boundaries.
const PAGE: u64 = 4096;

/// When the receiver of a rendezvous asks the sender to write the data (a driver that can
/// read the sender's memory can write the receiver's too), and the sender's share: the
/// percentage of the bytes it writes, the receiver reading the rest [`NMAD_RDV_WRITES`:
/// `auto` (default), `never`, `always`; `NMAD_RDV_WRITE_SHARE`: 1–100, default 50].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdvWrites {
    /// Unless the thread that runs the transfer waits for this very receive: a progression
    /// thread, a context switch, a tick, or a thread waiting for something else (a barrier)
    /// would otherwise take the whole copy from the application's computation.
    Auto { share: u8 },
    /// Never: the receiver reads.
    Never,
    /// Always (for tests and protocol studies).
    Always { share: u8 },
}

impl Default for RdvWrites {
    fn default() -> RdvWrites {
        RdvWrites::Auto { share: 50 }
    }
}

impl RdvWrites {
    pub(crate) fn from_env() -> Result<RdvWrites, String> {
        let share = match std::env::var("NMAD_RDV_WRITE_SHARE").as_deref() {
            Err(_) | Ok("") => 50,
            Ok(v) => match v.trim().parse::<u8>() {
                Ok(share @ 1..=100) => share,
                _ => return Err(format!("NMAD_RDV_WRITE_SHARE={v:?}: expected a percentage from 1 to 100")),
            },
        };
        match std::env::var("NMAD_RDV_WRITES").as_deref() {
            Err(_) | Ok("" | "auto") => Ok(RdvWrites::Auto { share }),
            Ok("never") => Ok(RdvWrites::Never),
            Ok("always") => Ok(RdvWrites::Always { share }),
            Ok(v) => Err(format!("NMAD_RDV_WRITES={v:?}: expected auto, never or always")),
        }
    }

    /// Whether a read is asked of the sender instead; `waited`: the thread that would read
    /// waits for that receive.
    pub(crate) fn asks(self, waited: bool) -> bool {
        match self {
            RdvWrites::Auto { .. } => !waited,
            RdvWrites::Never => false,
            RdvWrites::Always { .. } => true,
        }
    }

    /// Bytes of `accepted` the sender writes (the first ones; whole pages, at least one).
    fn written(self, accepted: u64) -> u64 {
        let share = match self {
            RdvWrites::Auto { share } | RdvWrites::Always { share } => share.clamp(1, 100),
            RdvWrites::Never => 100,
        };
        if accepted < SPLIT_MIN {
            return accepted;
        }
        let part = (u128::from(accepted) * u128::from(share) / 100) as u64;
        part.div_ceil(PAGE).saturating_mul(PAGE).clamp(PAGE, accepted)
    }
}

/// The receiver's side of a written rendezvous, in its table entry until WRITTEN.
pub(crate) struct Writing {
    rail: usize,
    len: u64,
    /// Ends with the entry's `writing` (WRITTEN, the fallback's bulk data, or a failure).
    _exposed: Exposed,
}

/// A write the sender owes: the first `len` bytes of send `cookie` into the peer's receive
/// `recv_cookie`, through the memory `key` names on rail `rail`.
pub(crate) struct WriteJob {
    peer: PeerId,
    cookie: u64,
    recv_cookie: u64,
    len: u64,
    rail: usize,
    key: Vec<u8>,
}

/// Receiver: asks the sender to write its share of the `accepted` bytes of its send
/// `sender_cookie` into `req`'s buffer, and reads the rest from `remote` itself. `false` if
/// this buffer cannot be exposed there (nothing changed: read it all instead).
///
/// # Safety
/// The caller holds `req`; it passes to the gate's table when this returns `true`.
pub(crate) unsafe fn ask(
    core: &Core,
    gate: &Gate,
    req: ReqPtr,
    accepted: u64,
    sender_cookie: u64,
    remote: &Remote,
) -> bool {
    let Ok(link) = gate.rails[remote.rail].link(core) else { return false };
    let written = core.config.rdv_writes.written(accepted);
    let mut local: Vec<SegmentMut> = Vec::new();
    // SAFETY: the caller holds the request.
    unsafe { req.state() }.data.segments_mut(0..written as usize, &mut local);
    let segs: Vec<Segment> = local.iter().map(|s| Segment { ptr: s.ptr.cast_const(), len: s.len }).collect();
    // SAFETY: the receive buffer is writable until the request completes, which waits for
    // WRITTEN or the bulk data (or a failure that ends the exposure with the entry).
    let Ok(exposed) = (unsafe { link.expose(&segs, Access::ReadWrite) }) else { return false };
    let key = exposed.key().to_vec();
    let reading = written < accepted;
    let recv_cookie = {
        let mut large = gate.large_in.lock().unwrap();
        // Under the table's lock, as `deliver::bulk` does: a failed gate drains the table.
        if let Some(e) = gate.failure() {
            drop(large);
            // SAFETY: not registered: we hold it.
            unsafe { req.complete(Some(e)) };
            return true;
        }
        let writing = Writing { rail: remote.rail, len: written, _exposed: exposed };
        large.insert(LargeRecv { req, accepted, received: 0, writing: Some(writing), reading, track: None })
    };
    core.counters.rdv_written.fetch_add(1, Relaxed);
    let rail = remote.rail;
    gate.control(core, Control::Rtw { cookie: sender_cookie, recv_cookie, accepted, written, rail, key });
    if reading {
        // SAFETY: the entry holds the request and, while `reading`, a failure leaves it to us.
        unsafe { read_share(core, gate, req, recv_cookie, written..accepted, remote, sender_cookie) };
    }
    true
}

/// Reads bytes `range` of the message into receive `recv_cookie` (`req`) from the sender's
/// memory, answers FIN, and counts them in.
///
/// # Safety
/// `req` is the request of entry `recv_cookie`, whose `reading` is set: nobody completes it
/// until this clears it.
unsafe fn read_share(
    core: &Core,
    gate: &Gate,
    req: ReqPtr,
    recv_cookie: u64,
    range: std::ops::Range<u64>,
    remote: &Remote,
    sender_cookie: u64,
) {
    let mut local: Vec<SegmentMut> = Vec::new();
    // SAFETY: the caller's contract: the request's data stays ours while `reading`.
    unsafe { req.state() }.data.segments_mut(range.start as usize..range.end as usize, &mut local);
    let len = range.end - range.start;
    let rail = &gate.rails[remote.rail];
    // SAFETY: `local` is the receive buffer (writable until completion, which waits for us); the
    // driver checks the key and the range, the system the addresses.
    let read = rail.link(core).and_then(|l| unsafe { l.read_remote(&remote.key, range.start, &local) });
    if read.is_ok() {
        core.counters.received(rail.driver, len as usize);
    }
    gate.control(core, Control::Fin(sender_cookie));
    let done = {
        let mut l = gate.large_in.lock().unwrap();
        match l.get_mut(recv_cookie) {
            Some(e) => {
                e.reading = false;
                e.received += len;
                if let Err(err) = &read {
                    // SAFETY: the table holds the request; we hold its lock.
                    let st = unsafe { e.req.state() };
                    st.error.get_or_insert(Error::Protocol(format!("reading the sender's memory: {err}")));
                }
                if e.received >= e.accepted {
                    l.remove(recv_cookie).map(|e| (e.req, Ok(e.accepted)))
                } else {
                    None
                }
            }
            // Drained by the gate's failure, which left the request to us.
            None => Some((req, Err(gate.failure()))),
        }
    };
    match done {
        // SAFETY: removed from the table here: we hold it.
        Some((r, Ok(accepted))) => unsafe {
            r.state().received = accepted;
            r.complete(None);
        },
        // SAFETY: drained by the failure, which left it to us (`reading`): we hold it.
        Some((r, Err(failure))) => unsafe {
            r.complete(Some(
                failure.unwrap_or_else(|| Error::Protocol("receive dropped while reading".into())),
            ))
        },
        None => {}
    }
}

impl Gate {
    /// RTW from the peer: the write is queued for the next driver poll (a thread waiting in the
    /// send, usually), which runs it outside the gate's lock.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_rtw(
        &self,
        core: &Core,
        cookie: u64,
        recv_cookie: u64,
        accepted: u64,
        written: u64,
        rail: &[u8],
        key: &[u8],
    ) -> Result<(), String> {
        let Some(rail) = self.rail_by_name(rail) else {
            return Err(format!("ready-to-write through an unknown rail for send {cookie:#x}"));
        };
        {
            let mut out = self.out.lock().unwrap();
            let req = out.answered(cookie, accepted, "ready-to-write")?;
            // SAFETY: registered sends are held by the gate; we hold its lock.
            let st = unsafe { req.state() };
            if st.pending > 0 {
                return Err(format!("second answer for send {cookie:#x}"));
            }
            // The write counts like a bulk piece, and so does the FIN of the receiver's share:
            // the send completes when both are done, and a NAK is refused meanwhile.
            st.awaits_fin = written < accepted;
            st.pending = 1 + u32::from(st.awaits_fin);
        }
        core.writes.push(WriteJob {
            peer: self.peer,
            cookie,
            recv_cookie,
            len: written,
            rail,
            key: key.to_vec(),
        });
        Ok(())
    }

    /// WRITTEN from the peer: the share receive `recv_cookie` asked it to write is there (its
    /// bytes count as received by the rail's driver, as a read's do).
    pub(crate) fn on_written(&self, core: &Core, recv_cookie: u64) -> Result<(), String> {
        let done = {
            let mut l = self.large_in.lock().unwrap();
            let Some(e) = l.get_mut(recv_cookie) else {
                return Err(format!("written for unknown receive {recv_cookie:#x}"));
            };
            let Some(w) = e.writing.take() else {
                return Err(format!("written for receive {recv_cookie:#x}, which asked for no write"));
            };
            core.counters.received(self.rails[w.rail].driver, w.len as usize);
            e.received += w.len;
            if e.received >= e.accepted && !e.reading { l.remove(recv_cookie) } else { None }
        };
        if let Some(e) = done {
            // SAFETY: removed from the table: we hold it.
            unsafe {
                e.req.state().received = e.accepted;
                e.req.complete(None);
            }
        }
        Ok(())
    }
}

/// Runs the queued writes. Returns how many ran.
pub(crate) fn run_writes(core: &Core) -> usize {
    let mut n = 0;
    while let Some(job) = core.writes.pop() {
        n += 1;
        let Ok(gate) = core.gate(job.peer) else { continue };
        if gate.failure().is_some() {
            continue; // the failure completed the send
        }
        write(core, &gate, &job);
    }
    n
}

/// Writes `job`'s bytes and answers WRITTEN; if the write fails, sends them as bulk data to
/// the receive instead (its entry takes bulk pieces). Either way the piece ends
/// (`Gate::on_piece_done`, at once or when the bulk data left).
fn write(core: &Core, gate: &Gate, job: &WriteJob) {
    let mut segs: Vec<Segment> = Vec::new();
    {
        let mut out = gate.out.lock().unwrap();
        let Some(&mut req) = out.sends.get_mut(job.cookie) else { return };
        // SAFETY: registered: held by the gate (its pending write keeps it there), under its lock.
        unsafe { req.state() }.data.segments(0..job.len as usize, &mut segs);
    }
    let rail = &gate.rails[job.rail];
    let link = match rail.link(core) {
        Ok(l) => l,
        Err(_) => return, // the link's failure fails the gate, and the send with it
    };
    // SAFETY: the send's memory is readable until it completes, which waits for this job
    // (`pending`); the driver checks the key and the range, the system the addresses.
    match unsafe { link.write_remote(&job.key, 0, &segs) } {
        Ok(()) => {
            core.counters.sent(rail.driver, job.len as usize);
            gate.control(core, Control::Written(job.recv_cookie));
            gate.on_piece_done(core, job.cookie, usize::MAX);
        }
        Err(e) => {
            static REFUSED: pm2_log::RateLimited = pm2_log::RateLimited::new(Duration::from_secs(5));
            REFUSED.note(|n| {
                log::warn!(
                    "rank {}: writing to peer {} refused ({e}); sending the data instead{}",
                    core.rank,
                    gate.peer,
                    pm2_log::repeats(n)
                )
            });
            let hdr = BulkHeader { cookie: job.recv_cookie, offset: 0, len: job.len };
            // SAFETY: as above: readable until the send completes, after bulk_sent.
            if let Err(e) = unsafe { link.send_bulk(hdr, &segs, job.cookie) } {
                log::warn!("rank {}: bulk data to peer {}: {e}", core.rank, gate.peer);
            } else {
                core.counters.sent(rail.driver, job.len as usize);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::core::wire::{self, Encoder, RemoteMem};
    use crate::{Request, Session, Source};

    /// RTW and WRITTEN naming nothing of ours are refused one by one (logged, ignored): the
    /// peer is not failed and a message after them arrives.
    #[test]
    fn answers_for_nothing_are_ignored() {
        let core = crate::core::test_core(64 << 10, 4);
        let key = [1u8, 1, 0x80, 0x20, 8];
        let mut p = vec![wire::VERSION];
        Encoder(&mut p).rtw(77, 1, 8, 8, RemoteMem { rail: b"self", key: &key });
        Encoder(&mut p).rtw(78, 1, 8, 4, RemoteMem { rail: b"no-such-rail", key: &key });
        Encoder(&mut p).written(5);
        core.on_packet(0, &p);
        assert!(core.gate(0).unwrap().failure().is_none(), "the peer was failed");
        assert!(core.writes.is_empty(), "a write was queued for an unknown send");
        let s = Session(core.session(1));
        let req = std::pin::pin!(Request::new());
        let mut buf = [0u8; 3];
        // SAFETY: `buf` outlives the wait below.
        unsafe { s.irecv(Source::Rank(0), 9, crate::Data::from_raw(buf.as_mut_ptr(), 3), req.as_ref()) }
            .unwrap();
        s.send(0, 9, b"abc").unwrap();
        req.wait();
        assert_eq!(&buf, b"abc");
    }
}
