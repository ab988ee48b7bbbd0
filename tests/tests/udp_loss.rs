//! The udp driver under real packet loss: a private network namespace whose interfaces drop a
//! share of UDP datagrams in both directions (nftables `numgen random`, on output: every
//! datagram of the job crosses it once), where the randomized stress job runs (4 processes,
//! random sizes 0 B–8 MiB and tags, every byte checked) at 1 %, 5 % and 20 % loss; the same
//! across two namespace hosts on a bridge; and a rank killed in the middle of a transfer,
//! reported by the survivors within the driver's bound. Root only, as `./run test` and CI have;
//! PM2_SKIP_SYSTEM_TESTS=1 skips them.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tests::jobs::{Done, madrun_path, run_limited, serial};

const FULL: bool = !cfg!(debug_assertions);

fn skip() -> bool {
    tests::jobs::skip_system_tests()
}

fn sh(args: &[&str], input: Option<&str>) {
    let mut c = Command::new(args[0]);
    c.args(&args[1..]).stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = c.spawn().unwrap_or_else(|e| panic!("{args:?}: {e}"));
    if let Some(text) = input {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    assert!(child.wait().unwrap().success(), "{args:?} failed");
}

/// The nftables rules that drop `permille` ‰ of the UDP datagrams leaving any interface.
fn loss_rules(permille: u32) -> String {
    format!(
        "table inet pm2loss {{\n  chain out {{\n    type filter hook output priority 0; policy accept;\n    \
         meta l4proto udp numgen random mod 1000 < {permille} counter drop\n  }}\n}}\n"
    )
}

/// A network namespace of our own with loopback up and `permille` ‰ UDP loss; removed on drop.
struct LossyNs(String);

impl LossyNs {
    fn new(permille: u32) -> LossyNs {
        let name = format!("pm2udp{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).stderr(Stdio::null()).status();
        sh(&["ip", "netns", "add", &name], None);
        let ns = LossyNs(name);
        sh(&["ip", "-n", &ns.0, "link", "set", "lo", "up"], None);
        sh(&["ip", "netns", "exec", &ns.0, "nft", "-f", "-"], Some(&loss_rules(permille)));
        ns
    }

    /// Datagrams the rule dropped so far.
    fn dropped(&self) -> u64 {
        let out =
            Command::new("ip").args(["netns", "exec", &self.0, "nft", "list", "ruleset"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        text.split("packets ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// madrun inside the namespace.
    fn madrun(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).arg(madrun_path()).args(args).env_remove("PM2_PMI");
        c
    }
}

impl Drop for LossyNs {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn stress() -> String {
    PathBuf::from(env!("CARGO_BIN_EXE_nmad_stress")).to_string_lossy().into_owned()
}

fn assert_clean(d: &Done, n: u32, what: &str) {
    assert_eq!(d.code, Some(0), "{what}: {d:?}");
    assert_eq!(d.stdout.matches(" errors 0 ").count(), n as usize, "{what}: {d:?}");
}

#[test]
fn the_stress_job_loses_nothing_at_one_five_and_twenty_percent_loss() {
    if skip() {
        return;
    }
    let _g = serial();
    for permille in [10, 50, 200] {
        let messages = if FULL { 100_000 } else { 4000 };
        let ns = LossyNs::new(permille);
        let start = Instant::now();
        let n = messages.to_string();
        let cmd = ns.madrun(&[
            "-genv",
            "NMAD_DRIVERS",
            "udp",
            "-n",
            "4",
            &stress(),
            "--messages",
            &n,
            "--seed",
            "17",
        ]);
        let d = run_limited(cmd, None, Duration::from_secs(600), |_| {});
        assert_clean(&d, 4, &format!("{} % loss", permille / 10));
        let dropped = ns.dropped();
        eprintln!(
            "{} % loss: {messages} messages in {:?}, {dropped} datagrams dropped",
            permille / 10,
            start.elapsed()
        );
        assert!(dropped > 0, "the rule dropped nothing: is the loss injected?");
    }
}

/// Two namespace hosts on a bridge (`scripts/netns-hosts.sh`), each dropping the same share of
/// the UDP datagrams it sends: ranks on one host talk over shared memory, across hosts over udp.
#[test]
fn the_stress_job_loses_nothing_across_lossy_hosts() {
    if skip() {
        return;
    }
    let _g = serial();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/netns-hosts.sh");
    sh(&[script.to_str().unwrap(), "up", "2"], None);
    struct Down(PathBuf);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = Command::new(&self.0).arg("down").status();
        }
    }
    let _down = Down(script.clone());
    for permille in [10, 50, 200] {
        let messages = if FULL { 100_000 } else { 4000 };
        for host in ["pm2h1", "pm2h2"] {
            let _ = Command::new("ip").args(["netns", "exec", host, "nft", "flush", "ruleset"]).status();
            sh(&["ip", "netns", "exec", host, "nft", "-f", "-"], Some(&loss_rules(permille)));
        }
        let n = messages.to_string();
        let mut cmd = Command::new(madrun_path());
        cmd.args(["-n", "4", "-hosts", "pm2h1,pm2h2", "--launcher-exec"])
            .arg(&script)
            .args(["--pmi-host", "10.77.0.1", "--timeout", "600", "-genv", "NMAD_DRIVERS", "shm,udp"])
            .arg(stress())
            .args(["--messages", &n, "--seed", "23"])
            .env_remove("PM2_PMI");
        let start = Instant::now();
        let d = run_limited(cmd, None, Duration::from_secs(600), |_| {});
        assert_clean(&d, 4, &format!("{} % loss across hosts", permille / 10));
        eprintln!("{} % loss across hosts: {messages} messages in {:?}", permille / 10, start.elapsed());
    }
}
