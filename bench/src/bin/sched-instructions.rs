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
//! `marcel::blocking`), `getppid` (the bare call, for the difference).

fn main() {
    let mut args = std::env::args().skip(1);
    let op = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let rt = marcel::Runtime::builder().lwps(1).ignore_env().build().expect("runtime");
    rt.block_on(move || match op.as_str() {
        "spawn_join" => (0..n).for_each(|i| {
            std::hint::black_box(marcel::spawn(move || i).join().unwrap());
        }),
        "yield" => {
            let a = marcel::spawn_on(0, move || (0..n / 2).for_each(|_| marcel::yield_now()));
            let b = marcel::spawn_on(0, move || (0..n / 2).for_each(|_| marcel::yield_now()));
            a.join().unwrap();
            b.join().unwrap();
        }
        "blocking" => (0..n).for_each(|_| {
            // SAFETY: getppid has no preconditions.
            std::hint::black_box(marcel::blocking(|| unsafe { libc::getppid() }));
        }),
        "getppid" => (0..n).for_each(|_| {
            // SAFETY: getppid has no preconditions.
            std::hint::black_box(unsafe { libc::getppid() });
        }),
        other => {
            eprintln!("usage: sched-instructions spawn_join|yield|blocking|getppid [N] (got {other:?})");
            std::process::exit(2);
        }
    });
}
