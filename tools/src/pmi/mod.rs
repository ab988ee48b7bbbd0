//! The PMI client: how a process of a job learns its rank and the job's size, and exchanges
//! key/value pairs with the other processes (business cards, the job key) through the launcher.
//!
//! Three backends, chosen from the environment at [`Pmi::init`]:
//! - **PMI-1** (`PMI_FD`, or `PMI_PORT` + `PMI_ID`), as MPICH's Hydra and madrun serve it;
//! - **PMI-2** (`PMI_FD` + `PMI_JOBID`, as `srun --mpi=pmi2` sets it), also served by madrun;
//! - **singleton** (no launcher): a 1-process job with a local key/value store.
//!
//! `PM2_PMI=1|2|singleton` forces a choice. Every reply is validated: a malformed, truncated or
//! oversized line is an error that quotes it, never a panic; a silent server times out after
//! `PM2_PMI_TIMEOUT` seconds (default 600, since a fence waits for the slowest process).

pub mod hydra_spawn;
pub mod names;
pub mod notice;
pub mod spawn;
pub mod wire;

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;
use wire::{Decoder, Framing, Message, WireError};

/// How [`Pmi::fence_unless_failed`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fence {
    Done,
    /// The launcher reported a process's end: the fence was given up.
    ProcessFailed,
}

/// Which protocol a [`Pmi`] speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Pmi1,
    Pmi2,
    Singleton,
}

/// A PMI failure. Its message says what was being done and quotes what came back.
#[derive(Debug)]
pub enum PmiError {
    /// The launcher's environment is missing or inconsistent.
    Env(String),
    Io {
        doing: String,
        err: io::Error,
    },
    /// A reply that does not parse or does not match the request.
    Protocol {
        doing: String,
        err: WireError,
    },
    /// The server answered with an error code.
    Server {
        doing: String,
        rc: i64,
        msg: String,
    },
    /// The server closed the connection.
    Closed {
        doing: String,
    },
    /// A key or value we were asked to send is not valid on the wire.
    Invalid(WireError),
}

impl fmt::Display for PmiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PmiError::Env(m) => write!(f, "PMI: {m}"),
            PmiError::Io { doing, err } => write!(f, "PMI: {doing}: {err}"),
            PmiError::Protocol { doing, err } => write!(f, "PMI: {doing}: {err}"),
            PmiError::Server { doing, rc, msg } => write!(f, "PMI: {doing}: server error rc={rc} ({msg})"),
            PmiError::Closed { doing } => write!(f, "PMI: {doing}: the launcher closed the connection"),
            PmiError::Invalid(e) => write!(f, "PMI: {e}"),
        }
    }
}

impl std::error::Error for PmiError {}

/// How long a rank keeps retrying the PMI port when its connection is dropped during the
/// handshake (madrun's port evicts the oldest unauthenticated connection when flooded).
const PORT_PATIENCE: Duration = Duration::from_secs(5);
/// Bound on each read of the handshake with the PMI port.
const PORT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Why one attempt at the PMI port failed.
enum DialError {
    Connect(io::Error),
    Handshake(crate::secret::HandshakeError),
}

impl DialError {
    /// Dropped during the handshake: another attempt may succeed.
    fn transient(&self) -> bool {
        use io::ErrorKind::*;
        let kind = match self {
            DialError::Connect(e) | DialError::Handshake(crate::secret::HandshakeError::Io(e)) => e.kind(),
            DialError::Handshake(_) => return false,
        };
        matches!(kind, ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof)
    }

    fn into_pmi(self, port: &str) -> PmiError {
        match self {
            DialError::Connect(err) => PmiError::Io { doing: format!("connecting to PMI_PORT={port}"), err },
            DialError::Handshake(e) => PmiError::Env(format!("job handshake with PMI_PORT={port}: {e}")),
        }
    }
}

/// A blocking, framed connection to the PMI server.
pub(crate) struct Conn {
    stream: UnixStream,
    dec: Decoder,
    timeout: Duration,
    /// The reply to a request given up on ([`Pmi::fence_unless_failed`]): dropped if it comes.
    abandoned: Option<String>,
}

impl Conn {
    pub(crate) fn new(stream: UnixStream) -> io::Result<Conn> {
        let secs =
            std::env::var("PM2_PMI_TIMEOUT").ok().and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(600);
        let timeout = Duration::from_secs(secs.max(1));
        stream.set_read_timeout(Some(timeout))?;
        Ok(Conn { stream, dec: Decoder::new(), timeout, abandoned: None })
    }

    fn send(&mut self, m: &Message, doing: &str) -> Result<(), PmiError> {
        let bytes = match self.dec.framing {
            Framing::V1 => m.encode_v1().into_bytes(),
            Framing::V2 => m.encode_v2(),
        };
        if bytes.len() > wire::MAX_MESSAGE {
            return Err(PmiError::Invalid(WireError {
                reason: "request too long".into(),
                quoted: wire::quote(&bytes),
            }));
        }
        self.stream.write_all(&bytes).map_err(|err| PmiError::Io { doing: doing.into(), err })
    }

    /// Writes bytes framed by the caller (Hydra's multi-line spawn blocks).
    fn send_raw(&mut self, bytes: &[u8], doing: &str) -> Result<(), PmiError> {
        self.stream.write_all(bytes).map_err(|err| PmiError::Io { doing: doing.into(), err })
    }

    fn recv(&mut self, doing: &str) -> Result<Message, PmiError> {
        loop {
            if let Some(m) = self.decoded(doing)? {
                return Ok(m);
            }
            self.read_some(doing)?;
        }
    }

    /// The next whole message already read, skipping the reply to an abandoned request.
    fn decoded(&mut self, doing: &str) -> Result<Option<Message>, PmiError> {
        loop {
            match self.dec.next_message() {
                Ok(Some(m)) if self.abandoned.as_deref() == Some(m.cmd.as_str()) => self.abandoned = None,
                Ok(m) => return Ok(m),
                Err(err) => return Err(PmiError::Protocol { doing: doing.into(), err }),
            }
        }
    }

    /// Reads what the server sent (blocking until something comes or the timeout).
    fn read_some(&mut self, doing: &str) -> Result<(), PmiError> {
        let mut buf = [0u8; 4096];
        let n = loop {
            match self.stream.read(&mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(PmiError::Io { doing: doing.into(), err }),
            }
        };
        if n == 0 {
            return Err(match self.dec.finish() {
                Err(err) => PmiError::Protocol { doing: doing.into(), err },
                Ok(()) => PmiError::Closed { doing: doing.into() },
            });
        }
        self.dec.feed(&buf[..n]);
        Ok(())
    }

    /// Sends a request and waits for its reply (`expect`, rc 0) unless `wake` becomes readable
    /// first and no reply follows within a short grace: then `None`, and the reply, if it ever
    /// comes, is dropped.
    fn call_unless_woken(
        &mut self,
        m: Message,
        expect: &str,
        wake: RawFd,
    ) -> Result<Option<Message>, PmiError> {
        const GRACE_MS: i32 = 100;
        let doing = format!("{} (expecting {expect})", m.cmd);
        self.send(&m, &doing)?;
        let waited = std::time::Instant::now();
        loop {
            if let Some(r) = self.decoded(&doing)? {
                return check_reply(r, expect, doing).map(Some);
            }
            let left = self.timeout.saturating_sub(waited.elapsed());
            if left.is_zero() {
                let err = io::Error::new(io::ErrorKind::TimedOut, "no reply from the launcher");
                return Err(PmiError::Io { doing, err });
            }
            let mut fds = [
                libc::pollfd { fd: self.stream.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: wake, events: libc::POLLIN, revents: 0 },
            ];
            let ms = left.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: `fds` holds two initialized pollfds and its length is passed.
            if unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) } < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(PmiError::Io { doing, err });
            }
            if fds[0].revents != 0 {
                self.read_some(&doing)?;
            } else if fds[1].revents != 0 {
                notice::drain();
                // A reply already on its way wins: the dead may have entered before dying.
                let mut own = [fds[0]];
                // SAFETY: one initialized pollfd, its length passed.
                if unsafe { libc::poll(own.as_mut_ptr(), 1, GRACE_MS) } > 0 {
                    continue;
                }
                self.abandoned = Some(expect.to_string());
                return Ok(None);
            }
        }
    }

    /// Sends a request and returns the reply, which must be `expect` with rc 0.
    pub(crate) fn call(&mut self, m: Message, expect: &str) -> Result<Message, PmiError> {
        let doing = format!("{} (expecting {expect})", m.cmd);
        let r = self.call_any_rc(m, expect)?;
        check_reply(r, expect, doing)
    }

    /// Sends a request and returns the reply, which must be `expect`, whatever its rc (PMI-1 get
    /// answers a missing key with rc=-1).
    pub(crate) fn call_any_rc(&mut self, m: Message, expect: &str) -> Result<Message, PmiError> {
        let doing = format!("{} (expecting {expect})", m.cmd);
        self.send(&m, &doing)?;
        let r = self.recv(&doing)?;
        check_cmd(r, expect, doing)
    }

    pub(crate) fn set_framing(&mut self, f: Framing) {
        self.dec.framing = f;
    }
}

/// A reply that must be `expect`.
fn check_cmd(r: Message, expect: &str, doing: String) -> Result<Message, PmiError> {
    if r.cmd != expect {
        return Err(PmiError::Protocol {
            doing,
            err: WireError { reason: format!("unexpected reply {:?}", r.cmd), quoted: r.encode_v1() },
        });
    }
    Ok(r)
}

/// A reply that must be `expect` with rc 0.
fn check_reply(r: Message, expect: &str, doing: String) -> Result<Message, PmiError> {
    let r = check_cmd(r, expect, doing.clone())?;
    let rc = r.rc().map_err(|err| PmiError::Protocol { doing: doing.clone(), err })?;
    if rc != 0 {
        let msg = r.get("msg").or(r.get("errmsg")).unwrap_or("").to_string();
        return Err(PmiError::Server { doing, rc, msg });
    }
    Ok(r)
}

fn env_int(name: &str) -> Result<Option<i64>, PmiError> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => {
            v.trim().parse().map(Some).map_err(|_| PmiError::Env(format!("{name}={v:?} is not an integer")))
        }
    }
}

fn field(m: &Message, key: &str, doing: &str) -> Result<i64, PmiError> {
    m.require_int(key).map_err(|err| PmiError::Protocol { doing: doing.into(), err })
}

enum Backend {
    V1 { conn: Conn, kvsname: String },
    V2 { conn: Conn, jobid: String },
    Singleton(HashMap<String, String>),
}

/// A process's connection to its job's process manager.
pub struct Pmi {
    backend: Backend,
    rank: u32,
    size: u32,
    appnum: i32,
    local: Option<(u32, u32)>,
    max_key: usize,
    max_value: usize,
}

impl fmt::Debug for Pmi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pmi")
            .field("kind", &self.kind())
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl Pmi {
    /// Connects to the job's process manager as the environment says (see the module docs).
    pub fn init() -> Result<Pmi, PmiError> {
        let forced = std::env::var("PM2_PMI").ok();
        let has_fd = std::env::var_os("PMI_FD").is_some();
        let has_port = std::env::var_os("PMI_PORT").is_some();
        let kind = match forced.as_deref().map(str::trim) {
            Some("1") => Kind::Pmi1,
            Some("2") => Kind::Pmi2,
            Some("singleton") => Kind::Singleton,
            Some(other) => {
                return Err(PmiError::Env(format!("PM2_PMI={other:?}: expected 1, 2 or singleton")));
            }
            None if has_fd && std::env::var_os("PMI_JOBID").is_some() => Kind::Pmi2,
            None if has_fd || has_port => Kind::Pmi1,
            None => {
                if env_int("SLURM_NTASKS")?.is_some_and(|n| n > 1) {
                    return Err(PmiError::Env(
                        "running in a Slurm step of several tasks without PMI: use srun --mpi=pmi2".into(),
                    ));
                }
                Kind::Singleton
            }
        };
        if kind == Kind::Pmi1 {
            // Before the first word to the launcher: a process that dies from now on makes
            // Hydra signal the others.
            notice::install();
        }
        let mut pmi = match kind {
            Kind::Singleton => Pmi::singleton(),
            Kind::Pmi1 => Pmi::init_v1(Pmi::connect()?)?,
            Kind::Pmi2 => Pmi::init_v2(Pmi::connect()?)?,
        };
        if let (Some(l), Some(n)) = (env_int("MPI_LOCALRANKID")?, env_int("MPI_LOCALNRANKS")?) {
            pmi.local = Some((l as u32, n as u32));
        } else if let (Some(l), Some(n)) = (env_int("SLURM_LOCALID")?, env_int("SLURM_STEP_TASKS_PER_NODE")?)
        {
            pmi.local = Some((l as u32, n as u32));
        }
        Ok(pmi)
    }

    /// A 1-process job with a local key/value store.
    pub fn singleton() -> Pmi {
        Pmi {
            backend: Backend::Singleton(HashMap::new()),
            rank: 0,
            size: 1,
            appnum: 0,
            local: Some((0, 1)),
            max_key: 64,
            max_value: 1024,
        }
    }

    /// The launcher's socket: `PMI_FD` (inherited), or `PMI_PORT` (`host:port`, with the job key
    /// handshake when `PM2_JOB_KEY` is set, as madrun does for remote ranks).
    fn connect() -> Result<UnixStream, PmiError> {
        if let Some(fd) = env_int("PMI_FD")? {
            let fd = fd as i32;
            // SAFETY: fcntl(F_GETFD) only queries the descriptor.
            if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
                return Err(PmiError::Env(format!("PMI_FD={fd} is not an open descriptor")));
            }
            // SAFETY: the launcher gave this process the descriptor for PMI; we take ownership.
            return Ok(unsafe { UnixStream::from_raw_fd(fd) });
        }
        let port = std::env::var("PMI_PORT")
            .map_err(|_| PmiError::Env("neither PMI_FD nor PMI_PORT is set".into()))?;
        let key = match std::env::var("PM2_JOB_KEY") {
            Ok(k) => Some(crate::secret::JobKey::from_hex(&k).map_err(PmiError::Env)?),
            Err(_) => None,
        };
        // A flooded port drops the oldest connection that has not proved the key: try again.
        let started = std::time::Instant::now();
        let mut backoff = Duration::from_millis(20);
        let tcp = loop {
            match Pmi::dial(port.trim(), key.as_ref()) {
                Ok(t) => break t,
                Err(e) if e.transient() && started.elapsed() + backoff < PORT_PATIENCE => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                Err(e) => return Err(e.into_pmi(&port)),
            }
        };
        // SAFETY: we hand the TCP socket's descriptor over to a UnixStream wrapper, which only
        // reads, writes and sets socket options on it (valid for any socket).
        Ok(unsafe { UnixStream::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(tcp)) })
    }

    /// One attempt at connecting to the PMI port and proving the job key.
    fn dial(port: &str, key: Option<&crate::secret::JobKey>) -> Result<std::net::TcpStream, DialError> {
        let tcp = std::net::TcpStream::connect(port).map_err(DialError::Connect)?;
        tcp.set_nodelay(true).ok();
        if let Some(key) = key {
            tcp.set_read_timeout(Some(PORT_HANDSHAKE_TIMEOUT)).ok();
            tcp.set_write_timeout(Some(PORT_HANDSHAKE_TIMEOUT)).ok();
            let mut t = &tcp;
            crate::secret::client_handshake(&mut t, key).map_err(DialError::Handshake)?;
            tcp.set_read_timeout(None).ok();
            tcp.set_write_timeout(None).ok();
        }
        Ok(tcp)
    }

    fn init_v1(stream: UnixStream) -> Result<Pmi, PmiError> {
        let mut conn =
            Conn::new(stream).map_err(|err| PmiError::Io { doing: "setting up PMI".into(), err })?;
        let (mut rank, mut size) = (env_int("PMI_RANK")?, env_int("PMI_SIZE")?);
        if std::env::var_os("PMI_FD").is_none() {
            // PMI_PORT mode: announce our id, the server tells rank and size.
            let id =
                env_int("PMI_ID")?.ok_or_else(|| PmiError::Env("PMI_PORT set but PMI_ID missing".into()))?;
            conn.send(&Message::new("initack").with("pmiid", id), "initack")?;
            let ack = conn.recv("initack")?;
            if ack.cmd != "initack" {
                return Err(PmiError::Protocol {
                    doing: "initack".into(),
                    err: WireError { reason: "expected initack".into(), quoted: ack.encode_v1() },
                });
            }
            for _ in 0..3 {
                let set = conn.recv("initack settings")?;
                match (set.cmd.as_str(), set.attrs.first()) {
                    ("set", Some((k, v))) if k == "size" => size = v.parse().ok(),
                    ("set", Some((k, v))) if k == "rank" => rank = v.parse().ok(),
                    ("set", Some((k, _))) if k == "debug" => {}
                    _ => {
                        return Err(PmiError::Protocol {
                            doing: "initack settings".into(),
                            err: WireError { reason: "expected cmd=set".into(), quoted: set.encode_v1() },
                        });
                    }
                }
            }
        }
        let (rank, size) = check_rank_size(rank, size)?;
        conn.call(Message::new("init").with("pmi_version", 1).with("pmi_subversion", 1), "response_to_init")?;
        let maxes = conn.call(Message::new("get_maxes"), "maxes")?;
        let max_key = field(&maxes, "keylen_max", "get_maxes")?.clamp(8, 4096) as usize;
        let max_value =
            field(&maxes, "vallen_max", "get_maxes")?.clamp(16, wire::MAX_MESSAGE as i64 / 2) as usize;
        let appnum = field(&conn.call(Message::new("get_appnum"), "appnum")?, "appnum", "get_appnum")? as i32;
        let k = conn.call(Message::new("get_my_kvsname"), "my_kvsname")?;
        let kvsname = k
            .require("kvsname")
            .map_err(|err| PmiError::Protocol { doing: "get_my_kvsname".into(), err })?
            .to_string();
        Ok(Pmi {
            backend: Backend::V1 { conn, kvsname },
            rank,
            size,
            appnum,
            local: None,
            max_key,
            max_value,
        })
    }

    fn init_v2(stream: UnixStream) -> Result<Pmi, PmiError> {
        let mut conn =
            Conn::new(stream).map_err(|err| PmiError::Io { doing: "setting up PMI-2".into(), err })?;
        // PMI-2 starts with a PMI-1-style line, then switches framing.
        conn.call(Message::new("init").with("pmi_version", 2).with("pmi_subversion", 0), "response_to_init")?;
        conn.set_framing(Framing::V2);
        let id = match env_int("PMI_ID")? {
            Some(i) => i,
            None => env_int("PMI_RANK")?
                .ok_or_else(|| PmiError::Env("PMI-2: neither PMI_ID nor PMI_RANK is set".into()))?,
        };
        // Slurm requires pmijobid, pmirank and threaded (as older MPICH clients sent them); other
        // servers ignore what they do not need.
        let pmijobid = std::env::var("PMI_JOBID")
            .ok()
            .filter(|j| wire::check_value(j).is_ok())
            .unwrap_or_else(|| "0".into());
        let m =
            Message::new("fullinit").with("pmijobid", pmijobid).with("pmirank", id).with("threaded", "FALSE");
        let r = conn.call(m, "fullinit-response")?;
        let rank = field(&r, "rank", "fullinit")?;
        let size = field(&r, "size", "fullinit")?;
        let (rank, size) = check_rank_size(Some(rank), Some(size))?;
        let appnum = r.get("appnum").and_then(|v| v.parse().ok()).unwrap_or(0);
        let j = conn.call(Message::new("job-getid"), "job-getid-response")?;
        let jobid = j
            .require("jobid")
            .map_err(|err| PmiError::Protocol { doing: "job-getid".into(), err })?
            .to_string();
        Ok(Pmi {
            backend: Backend::V2 { conn, jobid },
            rank,
            size,
            appnum,
            local: None,
            max_key: 64,
            max_value: 1024,
        })
    }

    pub fn kind(&self) -> Kind {
        match self.backend {
            Backend::V1 { .. } => Kind::Pmi1,
            Backend::V2 { .. } => Kind::Pmi2,
            Backend::Singleton(_) => Kind::Singleton,
        }
    }

    pub fn rank(&self) -> u32 {
        self.rank
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    pub fn appnum(&self) -> i32 {
        self.appnum
    }

    /// (rank on this host, processes on this host), when the launcher says.
    pub fn local(&self) -> Option<(u32, u32)> {
        self.local
    }

    /// Longest value the server accepts.
    pub fn max_value_len(&self) -> usize {
        self.max_value
    }

    fn check(&self, key: &str, value: Option<&str>) -> Result<(), PmiError> {
        wire::check_key(key).map_err(PmiError::Invalid)?;
        if key.len() > self.max_key {
            return Err(PmiError::Invalid(WireError {
                reason: format!("key longer than {}", self.max_key),
                quoted: key.into(),
            }));
        }
        if let Some(v) = value {
            wire::check_value(v).map_err(PmiError::Invalid)?;
            if v.len() > self.max_value {
                return Err(PmiError::Invalid(WireError {
                    reason: format!("value longer than {} bytes", self.max_value),
                    quoted: wire::quote(v.as_bytes()),
                }));
            }
        }
        Ok(())
    }

    /// Publishes `key=value` for the job; visible to the others after the next [`Pmi::fence`].
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        self.check(key, Some(value))?;
        match &mut self.backend {
            Backend::V1 { conn, kvsname } => {
                let m = Message::new("put")
                    .with("kvsname", kvsname.as_str())
                    .with("key", key)
                    .with("value", value);
                conn.call(m, "put_result").map(drop)
            }
            Backend::V2 { conn, .. } => conn
                .call(Message::new("kvs-put").with("key", key).with("value", value), "kvs-put-response")
                .map(drop),
            Backend::Singleton(kv) => {
                kv.insert(key.to_string(), value.to_string());
                Ok(())
            }
        }
    }

    /// Commits this process's puts and waits for every process of the job to do the same.
    pub fn fence(&mut self) -> Result<(), PmiError> {
        match &mut self.backend {
            Backend::V1 { conn, .. } => conn.call(Message::new("barrier_in"), "barrier_out").map(drop),
            Backend::V2 { conn, .. } => conn.call(Message::new("kvs-fence"), "kvs-fence-response").map(drop),
            Backend::Singleton(_) => Ok(()),
        }
    }

    /// A fence that gives up when the launcher reports that a process of the job ended without
    /// finalizing (Hydra's notice, which madrun sends too, see [`notice`]): under Hydra such a
    /// fence can never complete, the dead never enter it; under madrun it would, but a
    /// survivor that saw the failure itself does not enter it. Without a notice handler (PMI-2:
    /// Slurm ends the job) it is [`Pmi::fence`].
    pub fn fence_unless_failed(&mut self) -> Result<Fence, PmiError> {
        let Some(wake) = notice::wake_fd() else { return self.fence().map(|()| Fence::Done) };
        if notice::count() > 0 {
            return Ok(Fence::ProcessFailed);
        }
        let (conn, m, expect) = match &mut self.backend {
            Backend::V1 { conn, .. } => (conn, Message::new("barrier_in"), "barrier_out"),
            Backend::V2 { conn, .. } => (conn, Message::new("kvs-fence"), "kvs-fence-response"),
            Backend::Singleton(_) => return Ok(Fence::Done),
        };
        Ok(match conn.call_unless_woken(m, expect, wake)? {
            Some(_) => Fence::Done,
            None => Fence::ProcessFailed,
        })
    }

    /// The value another process put under `key` before the last fence, if any.
    pub fn get(&mut self, key: &str) -> Result<Option<String>, PmiError> {
        self.check(key, None)?;
        let value = match &mut self.backend {
            Backend::V1 { conn, kvsname } => {
                let r = conn.call_any_rc(
                    Message::new("get").with("kvsname", kvsname.as_str()).with("key", key),
                    "get_result",
                )?;
                let rc = r.rc().map_err(|err| PmiError::Protocol { doing: "get".into(), err })?;
                // Hydra answers rc=-1 msg=key_K_not_found for a missing key.
                if rc != 0 { None } else { r.get("value").map(str::to_string) }
            }
            Backend::V2 { conn, jobid } => {
                let m =
                    Message::new("kvs-get").with("jobid", jobid.as_str()).with("srcid", -1).with("key", key);
                let r = conn.call(m, "kvs-get-response")?;
                match r.get("found") {
                    Some(f) if f.eq_ignore_ascii_case("true") => r.get("value").map(str::to_string),
                    _ => None,
                }
            }
            Backend::Singleton(kv) => kv.get(key).cloned(),
        };
        if let Some(v) = &value
            && v.len() > wire::MAX_MESSAGE
        {
            return Err(PmiError::Invalid(WireError {
                reason: "value too long".into(),
                quoted: wire::quote(v.as_bytes()),
            }));
        }
        Ok(value)
    }

    /// Asks the launcher to kill the whole job with `code`; does not return when it works.
    pub fn abort(&mut self, code: i32, message: &str) -> PmiError {
        // Keep the message within the value alphabet (spaces become '_').
        let msg: String =
            message.bytes().map(|c| if wire::is_value_char(c) { c as char } else { '_' }).take(512).collect();
        let msg = if msg.is_empty() { "aborted".to_string() } else { msg };
        let sent = match &mut self.backend {
            Backend::V1 { conn, .. } => conn
                .send(&Message::new("abort").with("exitcode", code).with("message", msg.as_str()), "abort"),
            Backend::V2 { conn, .. } => conn.send(
                &Message::new("abort")
                    .with("isworld", "TRUE")
                    .with("exitcode", code)
                    .with("msg", msg.as_str()),
                "abort",
            ),
            Backend::Singleton(_) => {
                log::error!("PMI: abort ({code}): {message}");
                std::process::exit(code)
            }
        };
        // The launcher kills us; if it does not within a few seconds, exit ourselves.
        std::thread::sleep(Duration::from_secs(5));
        match sent {
            Err(e) => e,
            Ok(()) => PmiError::Env("the launcher did not act on abort".into()),
        }
    }

    /// Tells the launcher this process is done with PMI.
    pub fn finalize(mut self) -> Result<(), PmiError> {
        match &mut self.backend {
            Backend::V1 { conn, .. } => conn.call(Message::new("finalize"), "finalize_ack").map(drop),
            Backend::V2 { conn, .. } => conn.call(Message::new("finalize"), "finalize-response").map(drop),
            Backend::Singleton(_) => Ok(()),
        }
    }
}

fn check_rank_size(rank: Option<i64>, size: Option<i64>) -> Result<(u32, u32), PmiError> {
    match (rank, size) {
        (Some(r), Some(s)) if s >= 1 && r >= 0 && r < s && s <= u32::MAX as i64 => Ok((r as u32, s as u32)),
        (Some(r), Some(s)) => Err(PmiError::Env(format!("rank {r} and size {s} are inconsistent"))),
        _ => Err(PmiError::Env("the launcher did not give PMI_RANK and PMI_SIZE".into())),
    }
}

/// The job's secret key, collectively: every process of the job must call it. madrun preloads it
/// into the key/value store; under other launchers rank 0 creates it and the others read it after
/// a fence.
pub fn job_key(pmi: &mut Pmi) -> Result<crate::secret::JobKey, PmiError> {
    const PRELOADED: &str = "PM2_JOB_KEY";
    const BY_RANK0: &str = "pm2-job-key";
    let bad = |e: String| PmiError::Env(e);
    if let Some(v) = pmi.get(PRELOADED)? {
        return crate::secret::JobKey::from_hex(&v).map_err(bad);
    }
    if pmi.rank() == 0 {
        let k = crate::secret::JobKey::generate()
            .map_err(|err| PmiError::Io { doing: "generating the job key".into(), err })?;
        pmi.put(BY_RANK0, &k.to_hex())?;
    }
    pmi.fence()?;
    let v = pmi.get(BY_RANK0)?.ok_or_else(|| PmiError::Env("rank 0 did not publish the job key".into()))?;
    crate::secret::JobKey::from_hex(&v).map_err(bad)
}
