//! A job member for the finalize-after-failure tests (`madrun [-disable-auto-cleanup] -n 2
//! peer_failure MODE [ignore]`). Rank 1 fails right after `MPI_Init`, after writing its pid to
//! `$PEER_FAILURE_PIDFILE` (rank 0 waits until it is stopped or gone): `kill`: SIGKILL; `stop`:
//! SIGSTOP, alive but unreachable (rank 0 sends it SIGCONT once it gave up on it: rank 1 goes
//! on, unaware, to its finalize). Rank 0 talks to it anyway, a receive first (nothing connected
//! them yet): every call towards it must fail, and `MPI_Finalize` must return an error instead
//! of waiting for it. `kill-linked`: rank 1 dies once connected, while rank 0 has a receive from
//! it and a rendezvous send to it pending. `kill-in-barrier`: after enough collectives for the
//! node-local ones to run through a shared segment, rank 1 dies while rank 0 waits in a barrier.
//!
//! Rank 0 prints `OK 0: <step>: <failed> <ms>`, and exits with status 1 if its finalize failed
//! (as under `MPI_ERRORS_ARE_FATAL`), unless `ignore` is given (a program ignoring the error).

use madmpi::env::universe::{self, Threading};
use madmpi::p2p::{From, Rank, Tag};
use std::time::Instant;

const PIDFILE_ENV: &str = "PEER_FAILURE_PIDFILE";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("", String::as_str);
    let ignore = args.iter().any(|a| a == "ignore");
    let u = universe::init(Threading::Single).unwrap_or_else(|e| {
        eprintln!("peer_failure: init: {e}");
        std::process::exit(3)
    });
    let world = u.world();
    let me = world.rank();
    let ms = |t: Instant| t.elapsed().as_millis();
    let report = |what: &str, failed: bool, t: Instant| println!("OK {me}: {what}: {failed} {}", ms(t));
    if mode == "kill-linked" {
        return pending_operations_fail_when_a_linked_peer_dies(u);
    }
    if mode == "kill-in-barrier" {
        return a_barrier_fails_when_a_peer_dies_in_it(u);
    }
    if me == 1 {
        let sig = if mode == "stop" { libc::SIGSTOP } else { libc::SIGKILL };
        if let Ok(f) = std::env::var(PIDFILE_ENV) {
            std::fs::write(f, std::process::id().to_string()).expect("write the pid file");
        }
        // SAFETY: raise has no preconditions.
        unsafe { libc::raise(sig) };
        // Continued (`stop`): on to finalize, unaware of rank 0's view.
    }
    if me == 0 {
        if let Ok(f) = std::env::var(PIDFILE_ENV) {
            wait_for_the_failure(&f);
        }
        let t = Instant::now();
        // First a receive, before anything connected rank 0 to rank 1.
        let mut first = [0u8; 8];
        let r = world.recv(&mut first, From::Rank(1), Tag::Tag(3));
        report("first recv from rank 1", r.is_err(), t);
        eprintln!("peer_failure: first recv from rank 1: {r:?}");
        let t = Instant::now();
        let r = world.send(&[1u8; 8], Rank::Rank(1), 4);
        report("eager send to rank 1", r.is_err(), t);
        eprintln!("peer_failure: eager send to rank 1: {r:?}");
        let t = Instant::now();
        let mut buf = [0u8; 64];
        let r = world.recv(&mut buf, From::Rank(1), Tag::Tag(5));
        report("recv from rank 1", r.is_err(), t);
        let t = Instant::now();
        let big = vec![7u8; 1 << 20];
        let r = world.send(&big, Rank::Rank(1), 6);
        report("rendezvous send to rank 1", r.is_err(), t);
        let t = Instant::now();
        let r = world.barrier();
        report("barrier", r.is_err(), t);
        if let Ok(f) = std::env::var(PIDFILE_ENV) {
            let pid = read_pid(&f).expect("read the pid file");
            // SAFETY: kill has no memory preconditions; the pid is rank 1's, stopped.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
    }
    let t = Instant::now();
    let r = u.finalize();
    report("finalize", r.is_err(), t);
    eprintln!("peer_failure: rank {me}: finalize: {r:?}");
    if r.is_err() && !ignore {
        std::process::exit(1);
    }
}

fn read_pid(file: &str) -> Option<i32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// Waits until rank 1 (its pid in `file`) is stopped or gone, so that rank 0 meets the failure
/// whatever the timing.
fn wait_for_the_failure(file: &str) {
    loop {
        if let Some(pid) = read_pid(file) {
            // The state is the field after the command name, which ends with the last ')'.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
            if matches!(state, None | Some('T' | 'Z' | 'X')) {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// `kill-linked`: rank 0 posts a receive from rank 1 and a rendezvous send to it that rank 1
/// never matches, then sends the message rank 1 waits for; rank 1 dies once it has it.
/// Both pending requests must complete with errors, then the barrier and finalize fail.
fn pending_operations_fail_when_a_linked_peer_dies(u: universe::Universe) {
    let world = u.world();
    let me = world.rank();
    let report = |what: &str, failed: bool, t: Instant| {
        println!("OK {me}: {what}: {failed} {}", t.elapsed().as_millis());
    };
    if me == 1 {
        let mut b = [0u8; 8];
        world.recv(&mut b, From::Rank(0), Tag::Tag(1)).expect("rank 1: rank 0's message");
        // SAFETY: raise has no preconditions; SIGKILL ends the process here.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let t = Instant::now();
    let mut buf = [0u8; 64];
    let big = vec![7u8; 4 << 20];
    let recv = world.irecv(&mut buf, From::Rank(1), Tag::Tag(5)).expect("rank 0: irecv");
    let send = world.isend(&big, Rank::Rank(1), 6, madmpi::request::Mode::Standard).expect("rank 0: isend");
    // Sent after the rendezvous request (in order): rank 1 dies with both requests pending here.
    world.send(&[1u8; 8], Rank::Rank(1), 1).expect("rank 0: the message rank 1 waits for");
    let r = recv.wait();
    report("pending recv from rank 1", r.is_err(), t);
    let r = send.wait();
    report("pending rendezvous send to rank 1", r.is_err(), t);
    let t = Instant::now();
    let r = world.barrier();
    report("barrier", r.is_err(), t);
    let t = Instant::now();
    let r = u.finalize();
    report("finalize", r.is_err(), t);
    if r.is_err() {
        std::process::exit(1);
    }
}

/// `kill-in-barrier`: both ranks run collectives until the node-local path is set up (it is
/// from the fifth), then rank 1 dies 200 ms into rank 0's next barrier: the barrier, an
/// allreduce after it and finalize must fail, not wait.
fn a_barrier_fails_when_a_peer_dies_in_it(u: universe::Universe) {
    let world = u.world();
    let me = world.rank();
    let report = |what: &str, failed: bool, t: Instant| {
        println!("OK {me}: {what}: {failed} {}", t.elapsed().as_millis());
    };
    for i in 0..20 {
        world.barrier().expect("a barrier before the failure");
        let mut sum = [0u64];
        world
            .allreduce(&[1u64], &mut sum, &madmpi::coll::Op::builtin(madmpi::coll::Builtin::Sum))
            .expect("allreduce");
        assert_eq!(sum[0], 2, "allreduce {i}");
    }
    if me == 1 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        // SAFETY: raise has no preconditions; SIGKILL ends the process here.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let t = Instant::now();
    let r = world.barrier();
    report("barrier", r.is_err(), t);
    eprintln!("peer_failure: barrier: {r:?}");
    let t = Instant::now();
    let mut sum = [0u64];
    let r = world.allreduce(&[1u64], &mut sum, &madmpi::coll::Op::builtin(madmpi::coll::Builtin::Sum));
    report("allreduce", r.is_err(), t);
    let t = Instant::now();
    let r = u.finalize();
    report("finalize", r.is_err(), t);
    if r.is_err() {
        std::process::exit(1);
    }
}
