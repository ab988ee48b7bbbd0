//! madmpi's Rust API with real processes: `madrun -n 3 madmpi_check <scenario>`.
//!
//! Each scenario checks every value it receives and prints `OK <rank>: <step>` after each step
//! it completed; any mismatch ends the process with a message naming the rank and what differed
//! (a panic anywhere, in any thread, exits the process with status 1, so the launcher ends the
//! job instead of letting the other ranks wait forever), and a watchdog ends a rank stuck for
//! longer than [`WATCHDOG`] with status 2.
//!
//! Scenarios (the job must have exactly 3 ranks):
//! - `typed`: typed point-to-point over `i32`, `f64`, `u8` and a struct (`MPI_2INT`): blocking,
//!   nonblocking with `wait_any`/`wait_all`, `sendrecv`, probes, any source and any tag, `ssend`
//!   ([`p2p`]);
//! - `datatypes`: vector, indexed and struct types sent and received, element by element
//!   ([`datatypes`]);
//! - `comms`: dup, split, create, compare and group operations, with traffic ([`comms`]);
//! - `errors`: bad rank, bad tag, truncation and other argument errors come back as `Err` of the
//!   right class, and the job goes on ([`errors`]);
//! - `marcel`: MPI_THREAD_MULTIPLE with marcel user threads on one LWP ([`user_threads`]);
//! - `os-threads`: several OS threads per rank exchanging many messages ([`os_threads`]).

mod coll;
mod coll_gather;
mod coll_reduce;
mod comms;
mod datatypes;
mod errors;
mod os_threads;
mod p2p;
mod user_threads;

use madmpi::comm::Comm;
use madmpi::env::universe::{self, Threading};
use madmpi::p2p::{From, Rank, Tag};
use std::sync::OnceLock;
use std::time::Duration;

/// A rank still running after this is stuck (a deadlock): it exits with status 2.
const WATCHDOG: Duration = Duration::from_secs(20);

/// This process's world rank, for failure messages (set once MPI is up).
static RANK: OnceLock<u32> = OnceLock::new();

/// Prints `OK <rank>: <what>`.
pub fn ok(what: &str) {
    println!("OK {}: {what}", RANK.get().copied().unwrap_or(u32::MAX));
}

/// Every rank sends an empty message to every other rank on `ctl` and receives theirs: nobody
/// leaves before everybody arrived. `ctl` must carry nothing else, so that any-source and
/// any-tag receives of the scenarios (on other communicators) never see these messages.
pub fn barrier(ctl: &Comm) {
    let me = ctl.rank();
    let others: Vec<u32> = (0..ctl.size()).filter(|&r| r != me).collect();
    let mut none: Vec<[u8; 0]> = vec![[]; others.len()];
    let reqs: Vec<_> = others
        .iter()
        .zip(none.iter_mut())
        .map(|(&r, b)| ctl.irecv(b, From::Rank(r), Tag::Tag(0)).expect("barrier irecv"))
        .collect();
    for &r in &others {
        ctl.send::<u8>(&[], Rank::Rank(r), 0).expect("barrier send");
    }
    madmpi::request::wait_all(reqs).expect("barrier wait");
}

fn main() {
    let scenario = std::env::args().nth(1).unwrap_or_default();
    let run: fn(&universe::Universe) = match scenario.as_str() {
        "typed" => p2p::run,
        "datatypes" => datatypes::run,
        "comms" => comms::run,
        "errors" => errors::run,
        "os-threads" => os_threads::run,
        "marcel" => return user_threads::run(),
        "coll" => return coll::main(),
        "coll-gather" => return coll_gather::main(),
        "coll-reduce" => return coll_reduce::main(),
        _ => {
            eprintln!("usage: madmpi_check typed|datatypes|comms|errors|marcel|os-threads");
            std::process::exit(64);
        }
    };
    let u = start(&scenario);
    run(&u);
    u.finalize().expect("MPI_Finalize");
}

/// Initializes MPI (`MPI_THREAD_MULTIPLE`) for `scenario` on 3 ranks, with the failure hook and
/// the watchdog.
pub fn start(scenario: &str) -> universe::Universe {
    let u = start_any(scenario);
    assert_eq!(u.world().size(), 3, "run with madrun -n 3");
    u
}

/// A collective scenario (any number of ranks): `madmpi_check <scenario> <mode> [number]`.
/// `run` gets the world, the mode and the number, and returns `false` for an unknown mode
/// (then `usage` is printed and the process exits with 64). Prints `<SCENARIO> <rank> <ms>`
/// at the end (the elapsed time, upper case).
pub fn coll_scenario(scenario: &str, usage: &str, run: impl FnOnce(&Comm, &str, Option<usize>) -> bool) {
    let mode = std::env::args().nth(2).unwrap_or_default();
    let arg = std::env::args().nth(3).and_then(|s| s.parse::<usize>().ok());
    let u = start_any(scenario);
    let w = u.world().clone();
    let t0 = std::time::Instant::now();
    if !run(&w, &mode, arg) {
        eprintln!("usage: madmpi_check {scenario} {usage}");
        std::process::exit(64);
    }
    println!("{} {} {}", scenario.to_uppercase(), w.rank(), t0.elapsed().as_millis());
    u.finalize().expect("MPI_Finalize");
}

/// Initializes MPI (`MPI_THREAD_MULTIPLE`) for `scenario`, with the failure hook and the
/// watchdog.
fn start_any(scenario: &str) -> universe::Universe {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let rank = RANK.get().map_or("?".to_string(), u32::to_string);
        eprintln!("FAILED rank {rank}: {info}");
        hook(info);
        std::process::exit(1);
    }));
    let u = universe::init(Threading::Multiple).expect("MPI_Init_thread");
    let w = u.world();
    RANK.set(w.rank()).expect("initialized once");
    assert_eq!(u.threading(), Threading::Multiple);
    let (me, scenario) = (w.rank(), scenario.to_string());
    std::thread::spawn(move || {
        std::thread::sleep(WATCHDOG);
        eprintln!("FAILED rank {me}: scenario {scenario} still running after {WATCHDOG:?} (deadlock?)");
        std::process::exit(2);
    });
    u
}
