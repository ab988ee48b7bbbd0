//! The job's event loop: one thread, one poll(2) over the self-pipe (signals, handshake
//! results), the TCP PMI port, every PMI connection, every rank's stdout/stderr, madrun's stdin
//! and rank 0's stdin. It owns the job's life cycle:
//!
//! - **Running**: serve PMI, forward I/O, reap exited ranks. The first failure (a rank exiting
//!   non-zero, killed by a signal, exiting 0 between PMI init and finalize, calling abort, sending
//!   a malformed request; exiting, even with status 0, while another rank of its job waits in a
//!   PMI barrier; the timeout; SIGINT/SIGTERM/SIGHUP to madrun) prints one line, sets
//!   the exit code and sends SIGTERM (or the received signal) to the job's process group.
//!   With `-disable-auto-cleanup`, a rank's death is reported and remembered (the first one's
//!   code becomes madrun's) while the others go on.
//! - **Killing**: SIGKILL 2 s later (at once on a second signal); later deaths are not reported.
//! - **Draining**: every rank has exited; leftovers in the process group are SIGKILLed and the
//!   output pipes read to their end (at most 1 s), then madrun exits.

use super::io::{OutputForwarder, StdinForwarder, read_some, set_nonblocking, write_some};
use super::launch::Launched;
use super::procs::{self, Exit};
use super::remote::{Accepted, PmiPort};
use super::server::{ConnId, Event, OUTPUT_HIGH_WATER, Server};
use super::signals::SelfPipe;

mod spawning;
pub use spawning::Spawner;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

const KILL_GRACE: Duration = Duration::from_secs(2);
const DRAIN: Duration = Duration::from_secs(1);
/// Longest poll(2) wait, so that a missed wake-up costs at most this.
const TICK: Duration = Duration::from_millis(500);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    /// SIGKILL at `kill_at` (none: already sent).
    Killing {
        kill_at: Option<Instant>,
    },
    Draining {
        until: Instant,
    },
}

/// What a pollfd stands for.
#[derive(Clone, Copy, Debug)]
enum Src {
    Signals,
    Port,
    Stdin,
    RankStdin,
    Pmi(ConnId),
    Output(usize),
}

#[derive(Debug)]
struct RankProc {
    pid: i32,
    exit: Option<Exit>,
    /// Started here (not through a remote shell): signals reach the rank itself.
    local: bool,
}

#[derive(Debug)]
struct Output {
    file: File,
    fwd: OutputForwarder,
}

/// A running job.
#[derive(Debug)]
pub struct Job {
    ranks: Vec<RankProc>,
    server: Server,
    pmi: HashMap<ConnId, File>,
    outputs: Vec<Option<Output>>,
    stdin: StdinForwarder,
    port: Option<PmiPort>,
    signals: SelfPipe,
    timeout: Option<Duration>,
    tag_output: bool,
    phase: Phase,
    exit_code: i32,
    started: Instant,
    /// End the job at a rank's death (the default) or let the others go on.
    auto_cleanup: bool,
    /// How to start spawned jobs (`None`: spawn requests are refused).
    spawner: Option<Spawner>,
}

impl Job {
    pub fn new(
        server: Server,
        signals: SelfPipe,
        port: Option<PmiPort>,
        timeout: Option<Duration>,
        tag_output: bool,
    ) -> Job {
        Job {
            ranks: Vec::new(),
            server,
            pmi: HashMap::new(),
            outputs: Vec::new(),
            stdin: StdinForwarder::new(None),
            port,
            signals,
            timeout,
            tag_output,
            phase: Phase::Running,
            exit_code: 0,
            started: Instant::now(),
            auto_cleanup: true,
            spawner: None,
        }
    }

    /// `-disable-auto-cleanup` (Hydra's name): a rank's death is reported, and its exit code
    /// kept for madrun's, but the other ranks go on (fault-tolerant jobs); PMI barriers no longer
    /// wait for it.
    pub fn disable_auto_cleanup(&mut self) {
        self.auto_cleanup = false;
    }

    /// The job's process group: the first rank's pid (`None` before it is started).
    pub fn pgid(&self) -> Option<i32> {
        self.ranks.first().map(|r| r.pid)
    }

    /// Takes over a started rank (ranks are added in order).
    pub fn add_rank(&mut self, l: Launched) {
        let rank = self.ranks.len() as u32;
        self.ranks.push(RankProc { pid: l.pid, exit: None, local: l.pmi.is_some() });
        for (file, to_stderr) in [(l.stdout, false), (l.stderr, true)] {
            // A blocking pipe would only make reads wait: the loop reads after poll anyway.
            let _ = set_nonblocking(&file);
            self.outputs
                .push(Some(Output { file, fwd: OutputForwarder::new(rank, self.tag_output, to_stderr) }));
        }
        if let Some(stdin) = l.stdin.filter(|_| rank == 0) {
            let _ = set_nonblocking(&stdin);
            self.stdin = StdinForwarder::new(Some(stdin));
        }
        if let Some(pmi) = l.pmi {
            let id = self.server.add_conn(Some(rank), "a local socket".into());
            self.pmi.insert(id, pmi);
        }
    }

    /// A rank could not be started: kill those that were, then `run` reaps them.
    pub fn abort_start(&mut self, what: &str, code: i32) {
        if self.ranks.is_empty() {
            eprintln!("madrun: {what}");
            self.exit_code = code;
            self.phase = Phase::Draining { until: Instant::now() };
        } else {
            self.fail(what, code);
            self.kill_all(libc::SIGKILL);
            self.phase = Phase::Killing { kill_at: None };
        }
    }

    /// Runs the job to its end; returns madrun's exit code.
    pub fn run(mut self) -> i32 {
        self.started = Instant::now();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            self.reap(&mut buf);
            self.check_server();
            self.check_clock();
            if let Phase::Draining { until } = self.phase
                && (self.outputs.iter().all(Option::is_none) || Instant::now() >= until)
            {
                break;
            }
            let (mut fds, srcs) = self.poll_set();
            let ms = self.poll_timeout_ms();
            // SAFETY: `fds` is an array of fds.len() initialized pollfd structures.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    self.fail(&format!("poll failed: {e}"), 1);
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            for (p, src) in fds.iter().zip(srcs) {
                if p.revents != 0 {
                    self.dispatch(src, &mut buf);
                }
            }
            self.take_handshakes();
            self.serve_spawns();
            self.flush_pmi();
        }
        self.finish()
    }

    fn poll_set(&self) -> (Vec<libc::pollfd>, Vec<Src>) {
        let (mut fds, mut srcs) = (Vec::new(), Vec::new());
        let mut add = |fd: RawFd, events: libc::c_short, src: Src| {
            fds.push(libc::pollfd { fd, events, revents: 0 });
            srcs.push(src);
        };
        add(self.signals.fd(), libc::POLLIN, Src::Signals);
        if let Some(p) = &self.port {
            add(p.fd(), libc::POLLIN, Src::Port);
        }
        if self.stdin.wants_read() {
            add(0, libc::POLLIN, Src::Stdin);
        }
        if let Some(f) = self.stdin.pending_dst() {
            add(f.as_raw_fd(), libc::POLLOUT, Src::RankStdin);
        }
        for (&id, f) in &self.pmi {
            let pending = self.server.pending(id);
            let mut events = 0;
            if pending < OUTPUT_HIGH_WATER {
                events |= libc::POLLIN;
            }
            if pending > 0 {
                events |= libc::POLLOUT;
            }
            add(f.as_raw_fd(), events, Src::Pmi(id));
        }
        for (i, o) in self.outputs.iter().enumerate() {
            if let Some(o) = o {
                add(o.file.as_raw_fd(), libc::POLLIN, Src::Output(i));
            }
        }
        (fds, srcs)
    }

    fn poll_timeout_ms(&self) -> libc::c_int {
        let deadline = match self.phase {
            Phase::Running => self.timeout.map(|t| self.started + t),
            Phase::Killing { kill_at } => kill_at,
            Phase::Draining { until } => Some(until),
        };
        let wait = deadline.map_or(TICK, |d| d.saturating_duration_since(Instant::now()).min(TICK));
        wait.as_micros().div_ceil(1000) as libc::c_int
    }

    fn dispatch(&mut self, src: Src, buf: &mut [u8]) {
        match src {
            Src::Signals => {
                for b in self.signals.drain() {
                    self.on_signal(i32::from(b));
                }
            }
            Src::Port => {
                if let Some(p) = &mut self.port {
                    p.accept_all();
                }
            }
            Src::Stdin => self.stdin.read_stdin(),
            Src::RankStdin => self.stdin.write_rank(),
            Src::Pmi(id) => self.pump_pmi(id, false, buf),
            Src::Output(i) => self.pump_output(i, buf),
        }
    }

    /// SIGINT/SIGTERM/SIGHUP: forwarded to the job, which is then killed (at once the second
    /// time). SIGCHLD and wake-ups need nothing: every iteration reaps and takes handshakes.
    fn on_signal(&mut self, sig: i32) {
        if !matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP) {
            return;
        }
        match self.phase {
            Phase::Running => {
                self.fail_with(&format!("received {}", procs::signal_name(sig)), 128 + sig, sig);
            }
            Phase::Killing { kill_at: Some(_) } => {
                eprintln!("madrun: received {} again; sending SIGKILL", procs::signal_name(sig));
                self.kill_all(libc::SIGKILL);
                self.phase = Phase::Killing { kill_at: None };
            }
            _ => {}
        }
    }

    fn take_handshakes(&mut self) {
        let Some(port) = &mut self.port else { return };
        for a in port.finished() {
            match a {
                Accepted::Ok(stream, addr) => {
                    let id = self.server.add_conn(None, addr.to_string());
                    self.pmi.insert(id, File::from(OwnedFd::from(stream)));
                }
                Accepted::Rejected(addr, why) => {
                    log::warn!("rejected a connection from {addr}: {why}")
                }
            }
        }
    }

    /// Reads from a PMI connection and handles the requests: once, or (`to_end`, for a rank
    /// that exited) until nothing is left, without complaining about a truncated last request.
    fn pump_pmi(&mut self, id: ConnId, to_end: bool, buf: &mut [u8]) {
        loop {
            let Some(f) = self.pmi.get(&id) else { return };
            match read_some(f, buf) {
                Ok(None) => return,
                Ok(Some(0)) | Err(_) => {
                    self.pmi.remove(&id);
                    if let Err(ev) = self.server.eof(id, !to_end) {
                        self.on_event(id, ev);
                    }
                    return;
                }
                Ok(Some(n)) => {
                    if let Err(ev) = self.server.input(id, &buf[..n]) {
                        self.on_event(id, ev);
                        return;
                    }
                }
            }
            if !to_end {
                return;
            }
        }
    }

    fn on_event(&mut self, id: ConnId, ev: Event) {
        match ev {
            Event::Abort { rank, code, message } => {
                let sep = if message.is_empty() { "" } else { ": " };
                let what = format!("{} called PMI abort (exit code {code}){sep}{message}", self.name(rank));
                self.fail(&what, code);
            }
            Event::Malformed { rank, who, err } => {
                self.pmi.remove(&id);
                self.server.remove(id);
                let who = rank.map_or(who, |r| self.name(r));
                self.fail(
                    &format!("{who} sent a malformed PMI request ({}): {:?}", err.reason, err.quoted),
                    1,
                );
            }
        }
    }

    fn name(&self, rank: u32) -> String {
        match self.ranks.get(rank as usize) {
            Some(p) => format!("rank {rank} (pid {})", p.pid),
            None => format!("rank {rank}"),
        }
    }

    /// Writes pending PMI replies (as much as each socket takes).
    fn flush_pmi(&mut self) {
        for id in self.server.conn_ids() {
            let Some(out) = self.server.output(id).filter(|o| !o.is_empty()) else { continue };
            let Some(f) = self.pmi.get(&id) else {
                out.clear();
                continue;
            };
            match write_some(f, out) {
                Ok(n) => {
                    out.drain(..n);
                }
                Err(_) => {
                    // The rank is gone or going: its exit is what gets reported.
                    self.pmi.remove(&id);
                    self.server.remove(id);
                }
            }
        }
    }

    fn pump_output(&mut self, i: usize, buf: &mut [u8]) {
        let Some(o) = self.outputs.get_mut(i).and_then(Option::as_mut) else { return };
        match read_some(&o.file, buf) {
            Ok(None) => {}
            Ok(Some(0)) | Err(_) => {
                o.fwd.finish();
                self.outputs[i] = None;
            }
            Ok(Some(n)) => o.fwd.push(&buf[..n]),
        }
    }

    /// Notices ranks that exited (the group leader stays a zombie until `finish`).
    fn reap(&mut self, buf: &mut [u8]) {
        let leader = self.pgid();
        let mut exited = Vec::new();
        for (r, p) in self.ranks.iter_mut().enumerate() {
            if p.exit.is_none()
                && let Some(e) = procs::try_wait(p.pid, Some(p.pid) == leader)
            {
                p.exit = Some(e);
                exited.push((r as u32, e));
            }
        }
        for (r, e) in exited {
            self.on_exit(r, e, buf);
        }
        if !matches!(self.phase, Phase::Draining { .. }) && self.ranks.iter().all(|p| p.exit.is_some()) {
            self.begin_drain();
        }
    }

    fn on_exit(&mut self, rank: u32, e: Exit, buf: &mut [u8]) {
        if rank == 0 {
            self.stdin.close();
        }
        // What it sent before dying (an abort, say) explains its death better.
        if let Some(id) = self.server.conn_of(rank) {
            self.pump_pmi(id, true, buf);
        }
        self.server.exited(rank);
        match e {
            Exit::Code(0) if self.server.inited(rank) && !self.server.finalized(rank) => {
                let what = format!(
                    "{} exited with status 0 after PMI init but before PMI finalize (its peers would wait forever)",
                    self.name(rank)
                );
                self.lose(rank, &what, 1);
            }
            Exit::Code(0) => {}
            _ => self.lose(rank, &format!("{} {}", self.name(rank), e.describe()), e.exit_code()),
        }
    }

    /// What the PMI server noticed: full-store refusals (told), and a barrier that can no longer
    /// complete because a rank exited without entering it (before PMI init, or after a
    /// finalize that skipped the launcher's fence): the job fails, where Hydra's would wait
    /// forever.
    fn check_server(&mut self) {
        for (rank, what) in self.server.take_notices() {
            eprintln!("madrun: {}: {what}", self.name(rank));
        }
        if self.phase == Phase::Running
            && let Some((gone, waiting)) = self.server.blocked_barrier()
        {
            let when = if self.server.inited(gone) { "" } else { " before PMI init" };
            let what = format!(
                "{} exited{when} while {} waits in a PMI barrier that can no longer complete",
                self.name(gone),
                self.name(waiting)
            );
            self.lose(gone, &what, 1);
        }
    }

    /// Rank `rank` died: the job fails, unless auto-cleanup is off and nothing else failed.
    fn lose(&mut self, rank: u32, what: &str, code: i32) {
        if self.auto_cleanup || self.phase != Phase::Running {
            return self.fail(what, code);
        }
        eprintln!("madrun: {what}; the other ranks go on (-disable-auto-cleanup)");
        if self.exit_code == 0 {
            self.exit_code = code;
        }
        self.server.mark_dead(rank);
        self.notify_survivors(rank);
    }

    /// Hydra's failure notice: SIGUSR1 to every live local rank that spoke PMI (its library
    /// handles it from its first PMI word on; MPICH's reads `PMI_dead_processes`, ours wakes a
    /// finalize fence). Without it, a survivor that has not seen the failure itself waits in
    /// the job's fence while one that has waits for it among the survivors.
    fn notify_survivors(&self, dead: u32) {
        let live = self.ranks.iter().enumerate().filter(|&(r, p)| {
            r as u32 != dead && p.local && p.exit.is_none() && self.server.inited(r as u32)
        });
        for (_, p) in live {
            procs::signal_pid(p.pid, libc::SIGUSR1);
        }
    }

    fn check_clock(&mut self) {
        let now = Instant::now();
        match self.phase {
            Phase::Running => {
                if let Some(t) = self.timeout
                    && now >= self.started + t
                {
                    self.fail(&format!("job timed out after {} s", t.as_secs_f64()), 124);
                }
            }
            Phase::Killing { kill_at: Some(at) } if now >= at => {
                self.kill_all(libc::SIGKILL);
                self.phase = Phase::Killing { kill_at: None };
            }
            _ => {}
        }
    }

    fn fail(&mut self, what: &str, code: i32) {
        self.fail_with(what, code, libc::SIGTERM);
    }

    /// The first failure: report it, remember the exit code, signal the job. Later ones are
    /// consequences and stay silent.
    fn fail_with(&mut self, what: &str, code: i32, sig: i32) {
        if self.phase != Phase::Running {
            return;
        }
        eprintln!("madrun: {what}; killing the job");
        self.exit_code = code;
        self.port = None;
        self.kill_all(sig);
        self.phase = Phase::Killing { kill_at: Some(Instant::now() + KILL_GRACE) };
    }

    /// Signals the process group and every rank not yet reaped (in case one left the group).
    fn kill_all(&self, sig: i32) {
        if let Some(pgid) = self.pgid() {
            procs::signal_group(pgid, sig);
        }
        for p in self.ranks.iter().filter(|p| p.exit.is_none()) {
            procs::signal_pid(p.pid, sig);
        }
    }

    /// Every rank has exited: kill what is left in the group, stop serving, drain the output.
    fn begin_drain(&mut self) {
        if let Some(pgid) = self.pgid() {
            procs::signal_group(pgid, libc::SIGKILL);
        }
        for id in self.server.conn_ids() {
            self.server.remove(id);
        }
        self.pmi.clear();
        self.port = None;
        self.stdin.close();
        self.phase = Phase::Draining { until: Instant::now() + DRAIN };
    }

    fn finish(mut self) -> i32 {
        for o in self.outputs.iter_mut().flatten() {
            o.fwd.finish();
        }
        if let Some(leader) = self.ranks.first()
            && leader.exit.is_some()
        {
            procs::reap(leader.pid);
        }
        self.exit_code
    }
}
