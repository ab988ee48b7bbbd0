//! Fixed-size loops of scheduler operations, for instruction counts under callgrind (no hardware
//! counters on these machines; callgrind's counts repeat exactly whatever the load):
//!
//! ```sh
//! cargo build --release -p bench --bin sched-instructions
//! for n in 100000 200000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
//!     target/release/sched-instructions spawn_join $n 2>&1 | grep refs; done
//! ```
//! Instructions per operation = (refs at 2n - refs at n) / n, which cancels start-up costs.
//! Operations: `spawn_join`, `yield` (per switch), `blocking` (a non-blocking getppid inside
//! `marcel::blocking`), `getppid` (the bare call, for the difference). The loops are
//! [`bench::sched`]'s, the ones the criterion bench and `madbench` time.

use bench::sched::{getppid_calls, marcel_spawn_join, marcel_yield, runtime};

fn main() {
    pm2_log::init();
    let mut args = std::env::args().skip(1);
    let op = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let rt = runtime(1);
    std::hint::black_box(match op.as_str() {
        "spawn_join" => marcel_spawn_join(&rt, n),
        "yield" => marcel_yield(&rt, n),
        "blocking" => getppid_calls(&rt, true, n),
        "getppid" => getppid_calls(&rt, false, n),
        other => {
            eprintln!("usage: sched-instructions spawn_join|yield|blocking|getppid [N] (got {other:?})");
            std::process::exit(2);
        }
    });
}
