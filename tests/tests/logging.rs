//! `PM2_LOG` across a real job: madrun and its ranks (nmad processes) install the logging
//! backend, honour the variable (given to madrun, inherited by the ranks), and say who speaks
//! (`nmad_check[1] INFO nmad: …`). The level grammar itself is tested in `pm2-log/tests/`.

use std::time::Duration;
use tests::jobs::{Done, madrun, run_limited, serial, unique_marker};

const PROGRAM: &str = env!("CARGO_BIN_EXE_nmad_check");
const N: u32 = 2;

/// `madrun -n 2 nmad_check` with `PM2_LOG` set to `spec` (unset if `None`).
fn job(spec: Option<&str>) -> Done {
    let mut cmd = madrun(&unique_marker(), &["-n", &N.to_string(), PROGRAM]);
    match spec {
        Some(s) => cmd.env("PM2_LOG", s),
        None => cmd.env_remove("PM2_LOG"),
    };
    let d = run_limited(cmd, None, Duration::from_secs(60), |_| {});
    assert_eq!(d.code, Some(0), "PM2_LOG={spec:?}: {d:?}");
    d
}

/// Whether rank `r` logged nmad's start-up line at INFO, with its program and rank in front.
fn start_line(d: &Done, r: u32) -> bool {
    let want = format!("nmad_check[{r}] INFO nmad: rank {r} of {N}: drivers ");
    d.stderr.lines().any(|l| l.starts_with(&want))
}

#[test]
fn the_level_comes_from_pm2_log_in_madrun_and_every_rank() {
    let _g = serial();
    let info = job(Some("info"));
    for r in 0..N {
        assert!(start_line(&info, r), "rank {r}: {info:?}");
    }
    for quiet in [None, Some("off"), Some("pioman=info,warn")] {
        let d = job(quiet);
        assert!((0..N).all(|r| !start_line(&d, r)), "PM2_LOG={quiet:?}: {d:?}");
        assert!(!d.stderr.contains(" INFO "), "PM2_LOG={quiet:?}: {d:?}");
    }
    // A directive nobody can read is reported by each process that installed the backend.
    let bad = job(Some("nmad=loud"));
    let warned = |who: &str| {
        bad.stderr.lines().any(|l| l.starts_with(who) && l.contains("WARN pm2_log: PM2_LOG: `nmad=loud`"))
    };
    assert!(warned("madrun WARN "), "{bad:?}");
    for r in 0..N {
        assert!(warned(&format!("nmad_check[{r}] ")), "rank {r}: {bad:?}");
    }
}
