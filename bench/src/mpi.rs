//! Runs the C benchmark programs of `bench/mpi/` under three MPI libraries: ours (`libmpi.so`,
//! started by `madrun`), MPICH (`mpicc.mpich`, `mpiexec.hydra`) and Open MPI (`mpicc.openmpi`,
//! `mpiexec.openmpi`). The same source, the same pinning (`pin.sh`: rank i on the i-th CPU of
//! the pair), the same clock; each library's own binding is off.
//!
//! This module owns building the programs (their sources are embedded in madbench, so the binary
//! works from anywhere), the launch commands and the hang limit; it knows nothing of what a
//! program measures: its output is parsed by `record::parse_program_output`.

use crate::record::{Impl, Measurement, parse_program_output};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The programs, by name: their sources, embedded.
pub const PROGRAMS: [(&str, &str); 8] = [
    ("pingpong", include_str!("../mpi/pingpong.c")),
    ("overlap", include_str!("../mpi/overlap.c")),
    ("reactivity", include_str!("../mpi/reactivity.c")),
    ("mt", include_str!("../mpi/mt.c")),
    ("coll", include_str!("../mpi/coll.c")),
    ("rma", include_str!("../mpi/rma.c")),
    ("failover", include_str!("../mpi/failover.c")),
    ("io", include_str!("../mpi/io.c")),
];

const PIN_SH: &str = include_str!("../mpi/pin.sh");
/// The helpers the programs share (`#include "common.h"`).
const COMMON_H: &str = include_str!("../mpi/common.h");

/// How the two ranks talk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Transport {
    Shm,
    Tcp,
    /// Ours over the udp driver; MPICH and Open MPI have no UDP transport and run over their
    /// tcp, as in the `tcp` rows (the udp rows compare our udp with everyone's tcp).
    Udp,
}

impl Transport {
    pub fn label(self) -> &'static str {
        match self {
            Transport::Shm => "shm",
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
        }
    }
}

/// The MPI libraries, in the tables' column order.
pub const LIBS: [Impl; 3] = [Impl::Madmpi, Impl::Mpich, Impl::OpenMpi];

/// What `MPI_Get_library_version` must start with: proof that the intended library ran (a stray
/// `LD_LIBRARY_PATH` could make an MPICH binary load our soname link).
pub fn version_prefix(imp: Impl) -> &'static str {
    match imp {
        Impl::Madmpi => "MadMPI",
        Impl::Mpich => "MPICH",
        Impl::OpenMpi => "Open MPI",
        Impl::Limit | Impl::Os => "",
    }
}

/// Where our library and launcher are, and where the programs are built.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// The directory of `libmpi.so` (and its `libmpi.so.12` link), `madrun` and `mpicc`:
    /// madbench's own.
    pub lib_dir: PathBuf,
    pub madrun: PathBuf,
    /// Built programs and `pin.sh`.
    pub work: PathBuf,
    pub pin: PathBuf,
}

impl Toolchain {
    /// Finds `libmpi.so` and `madrun` beside `exe` (madbench is built with them:
    /// `cargo build --release -p madmpi-libmpi -p tools -p bench`), links the soname, and
    /// writes the sources and `pin.sh` into `<dir>/madbench-programs`.
    pub fn locate(exe: &Path) -> Result<Toolchain, String> {
        let dir = exe.parent().ok_or("madbench has no directory")?.to_path_buf();
        let lib = dir.join("libmpi.so");
        let madrun = dir.join("madrun");
        for f in [&lib, &madrun, &dir.join("mpicc")] {
            if !f.exists() {
                return Err(format!(
                    "{} is missing: build it with `cargo build --release -p madmpi-libmpi -p tools` \
                     (./run bench does)",
                    f.display()
                ));
            }
        }
        let link = dir.join("libmpi.so.12");
        if std::fs::read_link(&link).ok().as_deref() != Some(Path::new("libmpi.so")) {
            let _ = std::fs::remove_file(&link);
            // Another process (the C tests) may make the same link at the same time.
            if let Err(e) = std::os::unix::fs::symlink("libmpi.so", &link)
                && e.kind() != std::io::ErrorKind::AlreadyExists
            {
                return Err(format!("linking {}: {e}", link.display()));
            }
        }
        let work = dir.join("madbench-programs");
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let pin = work.join("pin.sh");
        write_if_changed(&pin, PIN_SH)?;
        std::fs::set_permissions(&pin, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", pin.display()))?;
        write_if_changed(&work.join("common.h"), COMMON_H)?;
        for (name, src) in PROGRAMS {
            write_if_changed(&work.join(format!("{name}.c")), src)?;
        }
        Ok(Toolchain { lib_dir: dir, madrun, work, pin })
    }

    /// Compiles program `name` for `imp` at -O2 (as MPI libraries' own benchmarks are); its path.
    pub fn compile(&self, imp: Impl, name: &str) -> Result<PathBuf, String> {
        let src = self.work.join(format!("{name}.c"));
        let exe = self.work.join(format!("{name}.{}", imp.key()));
        let (mut c, package) = match imp {
            // Our wrapper adds the header, the library and an rpath to it.
            Impl::Madmpi => (Command::new(self.lib_dir.join("mpicc")), "build-essential"),
            Impl::Mpich => (Command::new("mpicc.mpich"), "libmpich-dev"),
            Impl::OpenMpi => (Command::new("mpicc.openmpi"), "libopenmpi-dev"),
            Impl::Limit | Impl::Os => return Err("not an MPI library".into()),
        };
        // gcc 12 warns about MPI_STATUSES_IGNORE passed for an array parameter, with every header.
        // Built aside, then renamed into place: another madbench may be running the old binary
        // (the tests run several at once), and a file being written cannot be executed.
        let fresh = self.work.join(format!("{name}.{}.{}.tmp", imp.key(), std::process::id()));
        c.args(["-O2", "-Wall", "-Wno-stringop-overflow"]).arg(&src).arg("-o").arg(&fresh);
        c.arg("-lpthread");
        let out = c.output().map_err(|e| format!("{e} (Debian: apt-get install {package})"))?;
        if !out.status.success() {
            return Err(format!("compiling {name} failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        std::fs::rename(&fresh, &exe).map_err(|e| format!("{}: {e}", exe.display()))?;
        Ok(exe)
    }
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    // Written aside and renamed: a compiler of another madbench may be reading it.
    let fresh = path.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&fresh, text).map_err(|e| format!("{}: {e}", fresh.display()))?;
    std::fs::rename(&fresh, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// One launch: a program under a library, over a transport, with our pioman policy.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    pub imp: Impl,
    pub transport: Transport,
    /// `PIOMAN_POLICY` for our library (`None`: its default, `adaptive`); ignored by the others.
    pub policy: Option<&'a str>,
    pub exe: &'a Path,
    pub args: Vec<String>,
    /// `"A,B,..."`: rank i runs on the i-th CPU (the first if the list is shorter).
    pub cpus: &'a str,
    /// Ranks in the job (2 for every program but `coll`).
    pub ranks: u32,
}

impl Launch<'_> {
    /// The policy column of this launch's measurements.
    pub fn policy_label(&self) -> String {
        match self.imp {
            Impl::Madmpi => self.policy.unwrap_or("adaptive").to_string(),
            _ => "default".into(),
        }
    }

    /// The command: `ranks` ranks, pinned by `pin.sh`, tcp over the loopback interface.
    pub fn command(&self, tc: &Toolchain) -> Command {
        let mut c;
        match self.imp {
            Impl::Madmpi => {
                c = Command::new(&tc.madrun);
                c.arg("-n").arg(self.ranks.to_string());
                c.env("LD_LIBRARY_PATH", &tc.lib_dir);
                c.env(
                    "NMAD_DRIVERS",
                    match self.transport {
                        Transport::Shm => "shm",
                        Transport::Tcp => "tcp:lo",
                        Transport::Udp => "udp:lo",
                    },
                );
                if let Some(p) = self.policy {
                    c.env("PIOMAN_POLICY", p);
                }
            }
            Impl::Mpich => {
                c = Command::new("mpiexec.hydra");
                c.arg("-n").arg(self.ranks.to_string()).args(["-bind-to", "none"]);
                if self.transport != Transport::Shm {
                    // Debian's MPICH is ch4:ucx: UCX carries local messages too, so limiting UCX to
                    // tcp (and telling MPICH that no peer is local) makes it talk over TCP.
                    c.env("MPIR_CVAR_NOLOCAL", "1").env("UCX_TLS", "tcp,self").env("UCX_NET_DEVICES", "lo");
                }
            }
            _ => {
                c = Command::new("mpiexec.openmpi");
                c.args(["--allow-run-as-root", "--bind-to", "none", "--oversubscribe", "-n"]);
                c.arg(self.ranks.to_string()).args(["--mca", "pml", "ob1"]);
                match self.transport {
                    Transport::Shm => c.args(["--mca", "btl", "self,vader"]),
                    Transport::Tcp | Transport::Udp => {
                        c.args(["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"])
                    }
                };
            }
        }
        c.env("MPI_BENCH_CPUS", self.cpus).arg(&tc.pin).arg(self.exe).args(&self.args);
        c
    }

    /// Runs it and parses what it measured (`hang`: the limit after which the job is killed).
    pub fn run(&self, tc: &Toolchain, hang: Duration) -> Result<Vec<Measurement>, String> {
        self.run_command(self.command(tc), hang)
    }

    /// Runs `cmd` (this launch's [`Launch::command`], perhaps with more variables) and reads
    /// its measurements.
    pub fn run_command(&self, cmd: Command, hang: Duration) -> Result<Vec<Measurement>, String> {
        let text = run(cmd, hang)?;
        let (library, ms) =
            parse_program_output(&text, self.imp, self.transport.label(), &self.policy_label())?;
        if !library.starts_with(version_prefix(self.imp)) {
            return Err(format!("ran on the wrong library: {library}"));
        }
        Ok(ms)
    }
}

/// Variables a launch must not inherit from madbench: they would change a library's behaviour
/// (or, for `LD_LIBRARY_PATH`, which library an MPICH binary loads).
pub fn scrubbed(name: &str) -> bool {
    [
        "NMAD_",
        "PIOMAN_",
        "MARCEL_",
        "MADMPI_",
        "UCX_",
        "MPIR_CVAR_",
        "OMPI_",
        "PMI_",
        "PM2_",
        "HYDRA_",
        "MADBENCH_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || name == "LD_LIBRARY_PATH"
}

/// The command line and the variables a launch sets, for the record.
pub fn describe(c: &Command) -> String {
    let mut s = String::new();
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            let _ = write!(s, "{}={} ", k.to_string_lossy(), v.to_string_lossy());
        }
    }
    s.push_str(&c.get_program().to_string_lossy());
    for a in c.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs a launch with a clean environment and a hang limit; its standard output.
pub fn run(mut cmd: Command, hang: Duration) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        // Keep what the launch itself sets.
        if scrubbed(&k) && !cmd.get_envs().any(|(n, v)| n == &*k && v.is_some()) {
            cmd.env_remove(&*k);
        }
    }
    // Its own process group, so that a hang ends every process of the job.
    cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("starting {:?}: {e}", cmd.get_program()))?;
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let mut err = child.stderr.take().ok_or("no stderr")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t.elapsed() > hang {
            // SAFETY: signals the process group this function created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            let text = reader.join().unwrap_or_default();
            let errs = err_reader.join().unwrap_or_default();
            return Err(format!("no end after {hang:?}: killed; it had printed:\n{text}{errs}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = reader.join().unwrap_or_default();
    let errs = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("the job failed ({status}):\n{text}{errs}"));
    }
    Ok(text)
}

/// `4096` → `4 KiB`.
pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc() -> Toolchain {
        Toolchain {
            lib_dir: "/l".into(),
            madrun: "/l/madrun".into(),
            work: "/l/w".into(),
            pin: "/l/w/pin.sh".into(),
        }
    }

    #[test]
    fn scrubs_what_would_change_a_library() {
        for v in
            ["NMAD_DRIVERS", "UCX_TLS", "MPIR_CVAR_NOLOCAL", "OMPI_MCA_btl", "LD_LIBRARY_PATH", "PMI_RANK"]
        {
            assert!(scrubbed(v), "{v}");
        }
        assert!(!scrubbed("PATH") && !scrubbed("HOME"));
    }

    #[test]
    fn launches_pin_every_rank_through_the_wrapper() {
        for imp in LIBS {
            for t in [Transport::Shm, Transport::Tcp] {
                let l = Launch {
                    imp,
                    transport: t,
                    policy: None,
                    exe: Path::new("/x/pp"),
                    args: vec!["5".into()],
                    cpus: "0,1",
                    ranks: 2,
                };
                let d = describe(&l.command(&tc()));
                assert!(d.contains("MPI_BENCH_CPUS=0,1"), "{d}");
                assert!(d.ends_with("/l/w/pin.sh /x/pp 5"), "{d}");
                assert_eq!(d.contains("LD_LIBRARY_PATH=/l"), imp == Impl::Madmpi, "{d}");
                assert!(!d.contains("PIOMAN_POLICY"), "{d}");
            }
        }
        let l = Launch {
            imp: Impl::Madmpi,
            transport: Transport::Tcp,
            policy: Some("block"),
            exe: Path::new("p"),
            args: vec![],
            cpus: "0,1",
            ranks: 2,
        };
        let d = describe(&l.command(&tc()));
        assert!(d.contains("NMAD_DRIVERS=tcp:lo") && d.contains("PIOMAN_POLICY=block"), "{d}");
        assert_eq!(l.policy_label(), "block");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(64), "64 B");
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(4 << 20), "4 MiB");
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(1536 << 20), "1536 MiB");
    }
}
