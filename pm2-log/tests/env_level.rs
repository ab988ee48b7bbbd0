//! `PM2_LOG` in a real process: this program runs itself as a child with the variable set,
//! the child logs at every level from two modules (and from threads at once), and the parent
//! reads the child's stderr. Without a harness: `main` is the parent unless `CHILD` is set.

use std::process::Command;

const CHILD: &str = "PM2_LOG_TEST_CHILD";
const LEVELS: [&str; 5] = ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"];
const THREADS: usize = 8;
const LINES_PER_THREAD: usize = 200;

fn child() {
    pm2_log::init();
    for target in ["nmad::core", "pioman"] {
        log::error!(target: target, "said at ERROR");
        log::warn!(target: target, "said at WARN");
        log::info!(target: target, "said at INFO");
        log::debug!(target: target, "said at DEBUG");
        log::trace!(target: target, "said at TRACE");
    }
    // Long lines from threads at once: each must arrive whole.
    let filler = "x".repeat(300);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let filler = &filler;
            s.spawn(move || {
                for i in 0..LINES_PER_THREAD {
                    log::error!(target: "threads", "thread {t} line {i} {filler} end");
                }
            });
        }
    });
}

/// The child's stderr with `PM2_LOG` set to `spec` (unset if `None`) and `extra` in its env.
fn run(spec: Option<&str>, extra: &[(&str, &str)]) -> String {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.env(CHILD, "1").env_remove("PMI_RANK").envs(extra.iter().copied());
    match spec {
        Some(s) => c.env(pm2_log::VAR, s),
        None => c.env_remove(pm2_log::VAR),
    };
    let out = c.output().expect("run the child");
    assert!(out.status.success(), "child failed: {out:?}");
    String::from_utf8(out.stderr).expect("UTF-8 stderr")
}

/// The levels the child's stderr shows for `target`, in order.
fn levels(stderr: &str, target: &str) -> Vec<&'static str> {
    let said = |l: &str| stderr.lines().any(|line| line.ends_with(&format!(" {l} {target}: said at {l}")));
    LEVELS.into_iter().filter(|l| said(l)).collect()
}

fn program() -> String {
    let exe = std::env::current_exe().unwrap();
    exe.file_name().unwrap().to_string_lossy().into_owned()
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let both = |stderr: &str| (levels(stderr, "nmad::core"), levels(stderr, "pioman"));

    let default = run(None, &[]);
    assert_eq!(both(&default), (vec!["ERROR", "WARN"], vec!["ERROR", "WARN"]), "{default}");

    let off = run(Some("off"), &[]);
    assert_eq!(off, "", "PM2_LOG=off writes nothing");

    let debug = run(Some("debug"), &[]);
    let upto_debug = vec!["ERROR", "WARN", "INFO", "DEBUG"];
    assert_eq!(both(&debug), (upto_debug.clone(), upto_debug), "{debug}");

    let per_module = run(Some("nmad=trace,error"), &[]);
    assert_eq!(both(&per_module), (LEVELS.to_vec(), vec!["ERROR"]), "{per_module}");

    let bad = run(Some("loud"), &[]);
    assert_eq!(both(&bad), (vec!["ERROR", "WARN"], vec!["ERROR", "WARN"]), "{bad}");
    assert!(bad.lines().any(|l| l.contains("WARN pm2_log: PM2_LOG: `loud` is not a level")), "{bad}");

    // Who speaks: the program and the launcher's rank.
    let ranked = run(None, &[("PMI_RANK", "5")]);
    let prefix = format!("{}[5] ", program());
    assert!(ranked.lines().all(|l| l.starts_with(&prefix)), "{ranked}");
    assert!(default.lines().all(|l| l.starts_with(&format!("{} ", program()))), "{default}");

    // Lines from threads arrive whole: the prefix once, the end once, on each line.
    let threaded: Vec<&str> = default.lines().filter(|l| l.contains(" threads: thread ")).collect();
    assert_eq!(threaded.len(), THREADS * LINES_PER_THREAD, "{default}");
    for l in threaded {
        assert!(
            l.starts_with(&format!("{} ERROR threads: thread ", program())) && l.ends_with(" end"),
            "{l}"
        );
        assert_eq!(l.matches(" end").count(), 1, "{l}");
    }
    println!("env_level: ok");
}
