//! Progression overhead: what waiting through pioman costs against nmad polled directly, as the
//! one-way latency of 0 B and 8 B messages between two ranks, over shm and over TCP on loopback
//! (`NMAD_DRIVERS=shm` or `tcp:lo`).
//!
//! Both ranks are plain OS threads pinned to their CPU, no marcel, nmad's own API (sessions and
//! requests, no MPI layer on top), a ping-pong where both sides wait the same way, one job per
//! (transport, case):
//! - `nmad-direct`: the waiting thread polls in a loop, `while !req.test() { pioman.progress() }`.
//!   nmad has no poll of its own: its drivers run only as pioman tasks (one per driver, `self`
//!   and the transport's, registered by the core; the driver objects and the tasks are private).
//!   [`pioman::Pioman::progress`] is the lowest-level poll it offers: one pass over the
//!   registered tasks, each a run-state CAS, the driver's poll (plus pending rendezvous reads and
//!   busy gates) and a few counter stores; no policy, no spin-then-sleep logic, no parking, and
//!   one TSC read per pass. With `PIOMAN_THREADS=0` and no marcel, nothing else polls: the
//!   waiting thread is alone on the driver. Policy field `-`.
//! - `pioman-poll`: `req.wait()` under `PIOMAN_POLICY=poll` (the waiter spins driving progress,
//!   parks after a tick without an answer). Policy field `poll`.
//! - `pioman-block`: `req.wait()` under `PIOMAN_POLICY=block` (the waiter sleeps in the drivers'
//!   blocking waits, eventfd or socket, and is woken by the kernel). Policy field `block`.
//!
//! `PIOMAN_THREADS=0`: the waiting thread must be the only context polling (for the direct case,
//! by definition; for the pioman cases, a progression thread would share the rank's core with
//! the waiter and only compete with it), as in the MPI and nmad benchmarks. The strategy is
//! nmad's default (`NMAD_STRATEGY` is passed through from the conductor's environment).
//!
//! Measurements: `overhead`, case as above, madmpi, `shm`/`tcp`, 0 and 8 B, unit ns; madbench
//! computes the ratios.

use super::{Bench, RankArgs, Row, base_env, check_common, latency, measure, run_job, stat_of, write_rows};
use crate::record::Measurement;
use nmad::{Data, Nmad, Request, SendMode, Session, Source, Status, TagMatch};
use std::path::Path;
use std::pin::Pin;

/// Message sizes (bytes).
pub const SIZES: [u64; 2] = [0, 8];
/// (transport as recorded, `NMAD_DRIVERS`).
pub const TRANSPORTS: [(&str, &str); 2] = [("shm", "shm"), ("tcp", "tcp:lo")];
const DATA: u64 = 1;
const QUIT: u64 = 2;

/// How the ranks wait for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    NmadDirect,
    PiomanPoll,
    PiomanBlock,
}

impl Case {
    pub const ALL: [Case; 3] = [Case::NmadDirect, Case::PiomanPoll, Case::PiomanBlock];

    /// The measurement's case (and the value of [`super::CASE_ENV`]).
    pub fn key(self) -> &'static str {
        match self {
            Case::NmadDirect => "nmad-direct",
            Case::PiomanPoll => "pioman-poll",
            Case::PiomanBlock => "pioman-block",
        }
    }

    pub fn from_key(s: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.key() == s)
    }

    /// `PIOMAN_POLICY` of the job (the direct case never waits through pioman during the
    /// measurement; `poll` serves its start-up and finalization).
    pub fn pioman_policy(self) -> &'static str {
        match self {
            Case::NmadDirect | Case::PiomanPoll => "poll",
            Case::PiomanBlock => "block",
        }
    }

    /// The measurement's policy field.
    pub fn policy_field(self) -> &'static str {
        match self {
            Case::NmadDirect => "-",
            c => c.pioman_policy(),
        }
    }
}

/// Progression overhead: small-message (0 B and 8 B) one-way latency over shm and tcp (loopback)
/// between two ranks of `exe` (the madbench binary), nmad polled directly by the waiting thread
/// against waiting through pioman with policy `poll`, and with policy `block` (see the module
/// docs). Six jobs; `progress` is told which starts. Each configuration: one warm-up
/// repetition, then `reps`, each bounded by [`super::Bound::new`]`(quick)`.
pub fn overhead(
    exe: &Path,
    reps: u32,
    quick: bool,
    cpus: (usize, usize),
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Measurement>, String> {
    check_common(exe, reps, cpus)?;
    let mut out = Vec::new();
    let total = TRANSPORTS.len() * Case::ALL.len();
    for (t, (transport, drivers)) in TRANSPORTS.into_iter().enumerate() {
        for (c, case) in Case::ALL.into_iter().enumerate() {
            let what = format!("overhead, {transport}, {}", case.key());
            progress(&format!("{what} ({}/{total})", t * Case::ALL.len() + c + 1));
            let mut env = base_env(Bench::Overhead, cpus, reps, quick);
            env.push(("PIOMAN_POLICY".into(), case.pioman_policy().into()));
            env.push(("NMAD_DRIVERS".into(), drivers.into()));
            env.push((super::CASE_ENV.into(), case.key().into()));
            let rows = run_job(exe, &what, env)?;
            out.extend(measurements(&rows, case, transport).map_err(|e| format!("{what}: {e}"))?);
        }
    }
    Ok(out)
}

/// The measurements of one job.
fn measurements(rows: &[Row], case: Case, transport: &str) -> Result<Vec<Measurement>, String> {
    SIZES
        .iter()
        .map(|&size| {
            let stat = stat_of(rows, 1, size)?;
            Ok(latency("overhead", case.key(), transport, size, stat).policy(case.policy_field()))
        })
        .collect()
}

// ------------------------------------------------------------------ ranks

pub(super) fn rank(a: &RankArgs) -> Result<(), String> {
    let case = a.case.ok_or("no case")?;
    let nm = Nmad::init().map_err(|e| format!("nmad init: {e}"))?;
    if nm.size() != 2 || nm.rank() != a.rank {
        return Err(format!("rank {} of 2 expected, nmad says {} of {}", a.rank, nm.rank(), nm.size()));
    }
    let w = Waiter { nm: &nm, direct: case == Case::NmadDirect };
    let s = nm.session(0);
    match a.rank {
        0 => {
            let rows = pinger(a, &s, &w)?;
            write_rows(&a.out, &rows)?;
        }
        _ => echo(&s, &w)?,
    }
    nm.finalize().map_err(|e| format!("nmad finalize: {e}"))
}

/// Waits for requests as the case says.
struct Waiter<'a> {
    nm: &'a Nmad,
    direct: bool,
}

impl Waiter<'_> {
    fn complete(&self, req: &Request) -> Result<Status, String> {
        if self.direct {
            let pio = self.nm.pioman();
            while !req.test() {
                pio.progress();
            }
        } else {
            req.wait();
        }
        req.result().ok_or("the request did not complete")?.map_err(|e| e.to_string())
    }
}

fn pinger(a: &RankArgs, s: &Session, w: &Waiter<'_>) -> Result<Vec<Row>, String> {
    // Buffers before requests: the requests (complete or cancelled by their Drop) go first.
    let out = [0xa5u8; 8];
    let mut inb = [0u8; 8];
    let (sreq, rreq): (Pin<Box<Request>>, Pin<Box<Request>>) =
        (Box::pin(Request::new()), Box::pin(Request::new()));
    let mut rows = Vec::new();
    for size in SIZES {
        let n = size as usize;
        let samples = measure(&a.bound, a.reps, &mut || {
            // SAFETY: `inb` outlives `rreq` (declared first) and nothing else touches it until
            // the receive completed (waited for below, or cancelled by the request's Drop).
            unsafe { s.irecv(Source::Rank(1), DATA, Data::from_raw(inb.as_mut_ptr(), n), rreq.as_ref()) }
                .map_err(|e| e.to_string())?;
            // SAFETY: `out` is only read, and outlives `sreq`, waited for below.
            unsafe {
                s.isend(
                    1,
                    DATA,
                    Data::from_raw(out.as_ptr().cast_mut(), n),
                    SendMode::default(),
                    sreq.as_ref(),
                )
            }
            .map_err(|e| e.to_string())?;
            w.complete(&sreq)?;
            let st = w.complete(&rreq)?;
            if st.len != size {
                return Err(format!("echo of {} B instead of {size} B", st.len));
            }
            Ok(())
        })
        .map_err(|e| format!("{size} B ping-pong: {e}"))?;
        rows.push(Row { threads: 1, size, samples });
    }
    // SAFETY: no data.
    unsafe { s.isend(1, QUIT, Data::from_raw(std::ptr::null_mut(), 0), SendMode::default(), sreq.as_ref()) }
        .map_err(|e| e.to_string())?;
    w.complete(&sreq)?;
    Ok(rows)
}

/// Rank 1: echoes every `DATA` message until `QUIT`.
fn echo(s: &Session, w: &Waiter<'_>) -> Result<(), String> {
    let mut buf = [0u8; 8];
    let (sreq, rreq): (Pin<Box<Request>>, Pin<Box<Request>>) =
        (Box::pin(Request::new()), Box::pin(Request::new()));
    loop {
        // SAFETY: `buf` outlives the requests (declared first); the receive completes (waited
        // for) before the send reads it, and the send completes before the next receive.
        unsafe {
            s.irecv(Source::Rank(0), TagMatch::ANY, Data::from_raw(buf.as_mut_ptr(), 8), rreq.as_ref())
        }
        .map_err(|e| e.to_string())?;
        let st = w.complete(&rreq)?;
        match st.tag {
            DATA => {
                let n = (st.len as usize).min(buf.len());
                // SAFETY: as above.
                unsafe {
                    s.isend(0, DATA, Data::from_raw(buf.as_mut_ptr(), n), SendMode::default(), sreq.as_ref())
                }
                .map_err(|e| e.to_string())?;
                w.complete(&sreq)?;
            }
            QUIT => return Ok(()),
            t => return Err(format!("unexpected tag {t} from rank 0")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Impl, Stat};

    #[test]
    fn cases_name_their_policy() {
        for c in Case::ALL {
            assert_eq!(Case::from_key(c.key()), Some(c));
            assert!(pioman::policy::by_name(c.pioman_policy()).is_ok());
        }
        assert_eq!(Case::from_key("nope"), None);
        assert_eq!(Case::NmadDirect.policy_field(), "-");
        assert_eq!(Case::PiomanPoll.policy_field(), "poll");
        assert_eq!(Case::PiomanBlock.policy_field(), "block");
    }

    #[test]
    fn rows_become_measurements() {
        let rows = vec![
            Row { threads: 1, size: 0, samples: vec![500.0, 700.0, 600.0] },
            Row { threads: 1, size: 8, samples: vec![800.0] },
        ];
        let ms = measurements(&rows, Case::NmadDirect, "tcp").unwrap();
        assert_eq!(ms.len(), 2);
        let m = &ms[0];
        assert_eq!(
            (m.bench.as_str(), m.case.as_str(), m.imp, m.transport.as_str(), m.size, m.unit.as_str()),
            ("overhead", "nmad-direct", Impl::Madmpi, "tcp", 0, "ns")
        );
        assert_eq!((m.threads, m.policy.as_str()), (1, "-"));
        assert_eq!(m.stat, Stat { median: 600.0, min: 500.0, max: 700.0 });
        assert_eq!(ms[1].size, 8);
        assert_eq!(measurements(&rows, Case::PiomanBlock, "shm").unwrap()[0].policy, "block");
        assert!(measurements(&rows[..1], Case::PiomanPoll, "shm").is_err());
    }
}
