//! Prints the scheduler benchmarks as one table: marcel's median beside the OS-thread baseline
//! measured in the same `cargo bench` run, and their ratio. Reads criterion's estimates from
//! `target/criterion` (or the directory given as the first argument).

use bench::{criterion_median_ns, human_ns};
use std::path::{Path, PathBuf};

/// (group, marcel bench, baseline bench, what it measures)
const ROWS: &[(&str, &str, &str, &str)] = &[
    ("spawn_join", "marcel_1lwp", "std_thread", "spawn + join, 1 LWP"),
    ("spawn_join", "marcel_2lwp", "std_thread", "spawn + join, 2 LWPs"),
    ("yield_pingpong_one_core", "marcel", "os_sched_yield", "yield switch, one core"),
    ("pingpong_two_cores", "marcel_park_unpark", "os_condvar", "ping-pong round trip, two cores"),
    ("mutex_condvar_handoff", "marcel_1lwp", "os_1core", "mutex+condvar hand-off, one core"),
    ("mutex_condvar_handoff", "marcel_2lwp", "os_2cores", "mutex+condvar hand-off, two cores"),
    (
        "blocking_call_not_blocking",
        "marcel_blocking_getppid",
        "bare_getppid_in_user_thread",
        "blocking(getppid) vs getppid",
    ),
    (
        "blocking_call_not_blocking",
        "marcel_blocking_getppid",
        "eager_wake_idle_spare_then_getppid",
        "lazy rescue vs eager spare wake",
    ),
    ("resume_after_block", "marcel_spare_rescue", "os_switch_on_block", "others resume after a block"),
];

fn main() {
    let dir = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        root.join("target").join("criterion")
    });
    println!("{:<36} {:>12} {:>12} {:>10}   baseline", "measurement (median)", "marcel", "baseline", "ratio");
    let mut missing = 0;
    for (group, ours, base, what) in ROWS {
        match (criterion_median_ns(Some(&dir), group, ours), criterion_median_ns(Some(&dir), group, base)) {
            (Some(a), Some(b)) => {
                println!("{:<36} {:>12} {:>12} {:>9.3}x   {}", what, human_ns(a), human_ns(b), a / b, base)
            }
            _ => {
                missing += 1;
                println!("{what:<36} {:>12}", "(not measured)");
            }
        }
    }
    println!("ratio = marcel / baseline; below 1 means marcel is faster. Raw data: {}", dir.display());
    if missing == ROWS.len() {
        std::process::exit(1);
    }
}
