//! Running jobs from tests: madrun (built on demand), a hang limit, output capture, and finding
//! a job's processes by a marker variable in their environment.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

mod hang_report;

pub const MARKER: &str = "MADRUN_TEST_MARKER";
/// A failing job must be reported and gone within this.
pub const FAILURE_DEADLINE: Duration = Duration::from_secs(5);
/// Any job taking longer than this is a hang: it is killed and the test fails.
pub const HANG: Duration = Duration::from_secs(30);

static SERIAL: Mutex<()> = Mutex::new(());
static BUILD: Once = Once::new();

/// Serializes jobs (2 cores) and survives a previous test's panic.
/// `tool` from `PATH`, or a test failure naming the Debian package that provides it (tests that
/// need MPICH, a compiler or Hydra are never skipped).
pub fn require(tool: &str, package: &str) -> PathBuf {
    which(tool).unwrap_or_else(|| {
        panic!("`{tool}` is not installed: this test needs it (Debian: apt-get install {package})")
    })
}

/// `tool` from `PATH`, if installed.
pub fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Builds `libmpi.so` and the tools (madrun, mpicc) in the calling test's profile; their directory
/// (`target/<profile>`). Tests cache it: a build per test binary.
pub fn build_mpi_tree() -> PathBuf {
    let dir = bin_dir();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", "madmpi-libmpi", "-p", "tools", "--target-dir"])
        .arg(dir.parent().expect("target dir"));
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(
        cmd.status().expect("run cargo build").success(),
        "building libmpi.so and the tools failed: {cmd:?}"
    );
    assert!(dir.join("libmpi.so").is_file(), "no libmpi.so in {}", dir.display());
    dir
}

/// [`build_mpi_tree`]'s directory with the sonames programs load beside `libmpi.so`: ours
/// (`libmpi.so.12`) and MPICH's (`libmpich.so.12`), so that a program built by `mpicc.mpich`
/// runs on our library with `LD_LIBRARY_PATH` on it. Built once per test binary.
pub fn mpi_lib_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = build_mpi_tree();
        for link in ["libmpi.so.12", "libmpich.so.12"] {
            let path = dir.join(link);
            if std::fs::read_link(&path).ok().as_deref() != Some(Path::new("libmpi.so")) {
                let _ = std::fs::remove_file(&path);
                if let Err(e) = std::os::unix::fs::symlink("libmpi.so", &path) {
                    // Another test process may have made it at the same time.
                    assert!(e.kind() == std::io::ErrorKind::AlreadyExists, "linking {}: {e}", path.display());
                }
            }
        }
        dir
    })
}

/// Whether to skip a test that needs root (network namespaces, nftables, daemons): `true` with
/// `PM2_SKIP_SYSTEM_TESTS` set; otherwise it fails unless run as root (as `./run test` and CI
/// are).
pub fn skip_system_tests() -> bool {
    if std::env::var_os("PM2_SKIP_SYSTEM_TESTS").is_some() {
        eprintln!("system tests skipped (PM2_SKIP_SYSTEM_TESTS is set)");
        return true;
    }
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "these tests need root: run ./run test as root, or set PM2_SKIP_SYSTEM_TESTS=1");
    false
}

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// target/debug (the test binary is in target/debug/deps).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps").to_path_buf()
}

pub fn madrun_path() -> PathBuf {
    let dir = bin_dir();
    BUILD.call_once(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let target_dir = dir.parent().expect("target dir");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-q", "-p", "tools", "--bin", "madrun", "--target-dir"]).arg(target_dir);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let st = cmd.status().expect("run cargo build");
        assert!(st.success(), "cargo build -p tools --bin madrun failed");
    });
    dir.join("madrun")
}

pub fn unique_marker() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("t{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

pub struct Done {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl std::fmt::Debug for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?} after {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// A madrun command whose ranks carry `marker`.
pub fn madrun(marker: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(madrun_path());
    cmd.args(["-genv", MARKER, marker]).args(args).env_remove("PM2_PMI");
    cmd
}

/// Runs to completion (killed and failed after `HANG`), feeding `input` to stdin; `during`
/// runs with the child's pid once it started.
pub fn run_with(cmd: Command, input: Option<&[u8]>, during: impl FnOnce(u32)) -> Done {
    run_limited(cmd, input, HANG, during)
}

/// `run_with`, with its own hang limit.
pub fn run_limited(mut cmd: Command, input: Option<&[u8]>, hang: Duration, during: impl FnOnce(u32)) -> Done {
    let start = Instant::now();
    cmd.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start the job");
    let mut stdin = child.stdin.take();
    if let (Some(s), Some(data)) = (&mut stdin, input) {
        s.write_all(data).expect("write stdin");
    }
    drop(stdin);
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    during(child.id());
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > hang {
            let stacks = hang_report::stacks(child.id());
            let _ = hang_report::kill_tree(child.id());
            let _ = child.wait();
            let (stdout, stderr) = (out_t.join().unwrap_or_default(), err_t.join().unwrap_or_default());
            panic!(
                "job hung for {hang:?}: {cmd:?}\n--- stdout (end)\n{}--- stderr (end)\n{}--- stacks\n{stacks}",
                hang_report::tail(&stdout, 40),
                hang_report::tail(&stderr, 40)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = start.elapsed();
    let done =
        Done { code: status.code(), stdout: out_t.join().unwrap(), stderr: err_t.join().unwrap(), elapsed };
    eprintln!("{:?}: {done:?}", cmd.get_args().collect::<Vec<_>>());
    done
}

pub fn run(cmd: Command) -> Done {
    run_with(cmd, None, |_| {})
}

/// Pids of live processes whose environment has `MARKER=marker`.
pub fn marked(marker: &str) -> Vec<u32> {
    let needle = format!("{MARKER}={marker}");
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&c| c == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}

/// `madrun [-genv K V]... -n N program args...`, run to the end; prints its duration (the
/// multi-process tests show where their time goes).
pub fn madrun_job(program: &str, n: u32, env: &[(&str, &str)], args: &[&str]) -> Done {
    let mut a: Vec<String> = Vec::new();
    for (k, v) in env {
        a.extend(["-genv".into(), k.to_string(), v.to_string()]);
    }
    a.extend(["-n".into(), n.to_string(), program.into()]);
    a.extend(args.iter().map(|s| s.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let t = std::time::Instant::now();
    let d = run(madrun(&unique_marker(), &a));
    eprintln!("madrun -n {n} {env:?} {args:?}: {:.2} s", t.elapsed().as_secs_f64());
    d
}

/// Exit status 0 and, for every rank below `n`, an `OK <rank>: <step>` line for each of `steps`.
pub fn assert_ranks_ok(d: &Done, n: u32, steps: &[&str]) {
    assert_eq!(d.code, Some(0), "{d:?}");
    for rank in 0..n {
        for step in steps {
            let want = format!("OK {rank}: {step}");
            assert!(d.stdout.lines().any(|l| l.starts_with(&want)), "missing {want:?}: {d:?}");
        }
    }
}
