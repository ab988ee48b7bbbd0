//! madrun, the job launcher (like MPICH's mpiexec/Hydra, which it imitates on the wire): starts
//! the ranks, serves them PMI, forwards their I/O and signals, and kills the whole job when one
//! rank fails. [`run`] is the entry point; `src/bin/madrun.rs` is the command line.
//!
//! Files and what each owns:
//! - `mod.rs`: [`JobSpec`] and [`run`] (setting the job up: key, KVS name, placement, ranks);
//! - [`cli`]: the command line, parsed into a [`JobSpec`];
//! - `launch.rs`: placement over `-hosts`, each rank's environment and command line;
//! - `procs.rs`: spawning (process group, PR_SET_PDEATHSIG), reaping, killing;
//! - `server.rs`: the PMI-1/PMI-2 server (KVS, barrier, per-connection decoding), without I/O;
//! - `event_loop.rs`: the single-threaded poll(2) loop and the job's life cycle and failures;
//!   `event_loop/spawning.rs`: starting the jobs its ranks spawn (`MPI_Comm_spawn`);
//! - `io.rs`: stdout/stderr forwarding (with `--tag-output`), stdin to rank 0;
//! - [`remote`]: local-host detection, the remote command line, the TCP PMI port + handshake;
//! - `signals.rs`: the self-pipe for signals and wake-ups.

pub mod cli;
mod event_loop;
mod io;
mod launch;
mod procs;
pub mod remote;
mod server;
mod signals;

use std::time::Duration;

/// The KVS key under which the job key is preloaded, as hex (what [`crate::pmi::job_key`] reads).
pub const JOB_KEY_NAME: &str = "PM2_JOB_KEY";

/// Processes the jobs spawned by a job's processes may have in all.
const SPAWN_ROOM: u32 = 1024;
/// nmad's limit on peer ids (`nmad::bootstrap::UNIVERSE_MAX`).
const UNIVERSE_MAX: u32 = 1 << 16;

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub nprocs: u32,
    /// Hosts, round-robin; empty: all local.
    pub hosts: Vec<String>,
    /// Extra environment for every rank (`-genv`, `--env`), in order.
    pub env: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    pub tag_output: bool,
    /// Command that starts a remote rank: `CMD HOST env VAR=VALUE... PROGRAM ARGS...`.
    pub launcher_exec: String,
    pub pmi_bind: Option<String>,
    pub pmi_host: Option<String>,
    /// End the job when a rank dies (`-disable-auto-cleanup` turns it off).
    pub auto_cleanup: bool,
    /// Program and arguments.
    pub program: Vec<String>,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            nprocs: 1,
            hosts: Vec::new(),
            env: Vec::new(),
            timeout: None,
            tag_output: false,
            launcher_exec: "ssh".to_string(),
            pmi_bind: None,
            pmi_host: None,
            auto_cleanup: true,
            program: Vec::new(),
        }
    }
}

/// Runs a job to its end and returns madrun's exit code. Call it from the main thread (or one
/// that outlives the job): ranks are spawned from the calling thread, and PR_SET_PDEATHSIG kills
/// them when that thread ends. It installs handlers for SIGINT, SIGTERM, SIGHUP and SIGCHLD.
pub fn run(spec: &JobSpec) -> i32 {
    match setup(spec) {
        Ok(job) => job.run(),
        Err(e) => {
            eprintln!("madrun: {e}");
            1
        }
    }
}

fn setup(spec: &JobSpec) -> Result<event_loop::Job, String> {
    if spec.program.is_empty() || spec.nprocs == 0 {
        return Err("nothing to run".into());
    }
    ensure_std_fds();
    check_fd_limit(spec.nprocs)?;
    let key = crate::secret::JobKey::generate().map_err(|e| format!("cannot generate the job key: {e}"))?;
    let mut nonce = [0u8; 4];
    crate::secret::random_bytes(&mut nonce).map_err(|e| format!("cannot get random bytes: {e}"))?;
    let kvsname = format!("madrun_{}_{}", std::process::id(), crate::pmi::wire::encode_value(&nonce));
    let places = launch::place(spec.nprocs, &spec.hosts, remote::hostname().as_deref());
    let signals = signals::SelfPipe::install(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD])
        .map_err(|e| format!("cannot set up signal handling: {e}"))?;
    let port = if places.iter().any(|p| p.host.is_some()) {
        let (bind, host) = (spec.pmi_bind.as_deref(), spec.pmi_host.as_deref());
        let remote_hosts: Vec<String> = places.iter().filter_map(|p| p.host.clone()).collect();
        Some(remote::PmiPort::open(bind, host, &remote_hosts, key.clone(), signals.waker())?)
    } else {
        None
    };
    let advertised = port.as_ref().map(|p| p.advertised.clone());
    let mut server = server::Server::new(&kvsname, places.iter().map(|p| p.host.is_some()).collect());
    server.preload(JOB_KEY_NAME, &key.to_hex());
    let mut job = event_loop::Job::new(server, signals, port, spec.timeout, spec.tag_output);
    if !spec.auto_cleanup {
        job.disable_auto_cleanup();
    }
    // Room for the jobs MPI_Comm_spawn starts: every process knows where its job is among them.
    let capacity = spec.nprocs.saturating_add(SPAWN_ROOM).min(UNIVERSE_MAX);
    let mut base = spec.clone();
    if advertised.is_none() {
        // No PMI port: every rank, spawned ones too, runs here (nmad's `SINGLE_NODE_VAR`), so
        // their network drivers listen on loopback only.
        base.env.push(("PM2_SINGLE_NODE".into(), "1".into()));
    }
    let mut first = base.clone();
    first.env.push(("PM2_UNIVERSE".into(), format!("0/{capacity}")));
    job.set_spawner(event_loop::Spawner::new(base, key.to_hex(), capacity));
    for (rank, place) in places.iter().enumerate() {
        match launch::start_rank(
            &first,
            rank as u32,
            place,
            job.pgid(),
            &key.to_hex(),
            advertised.as_deref(),
            None,
        ) {
            Ok(l) => job.add_rank(l),
            Err((what, code)) => {
                job.abort_start(&what, code);
                break;
            }
        }
    }
    Ok(job)
}

/// Opens /dev/null on closed descriptors 0-2, so that no socket or pipe of ours lands there.
fn ensure_std_fds() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only queries the descriptor.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            // SAFETY: opens a file with a valid NUL-terminated path; the lowest free descriptor
            // (this one) is used and deliberately never closed.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

/// Raises the soft open-file limit if N ranks need more (about 4 descriptors each).
fn check_fd_limit(n: u32) -> Result<(), String> {
    let need = 4 * u64::from(n) + 64;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into our struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur >= need {
        return Ok(());
    }
    let raised = libc::rlimit { rlim_cur: need.min(lim.rlim_max), rlim_max: lim.rlim_max };
    // SAFETY: setrlimit reads our struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 || raised.rlim_cur < need {
        return Err(format!(
            "{n} processes need about {need} open files, but the limit is {} (ulimit -n)",
            lim.rlim_max
        ));
    }
    Ok(())
}
