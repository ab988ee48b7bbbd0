//! The PMI server, without I/O: the job's key/value store, the barrier, and one protocol state per
//! connection (its [`Decoder`], which rank it is, its pending replies). It speaks PMI-1 (as
//! Hydra does, including the `initack` exchange of PMI_PORT connections) and PMI-2 (after a v1
//! `init pmi_version=2` line, the connection switches to v2 framing).
//!
//! The name service of PMI-1 (`publish_name`, `lookup_name`, `unpublish_name`) is `names`.
//!
//! Input is untrusted: anything that does not parse, lacks a required field, is an unknown
//! command or breaks the protocol (wrong rank, barrier entered twice) is an
//! [`Event::Malformed`]; the event loop then closes the connection and fails the job.

use crate::pmi::wire::{Decoder, Framing, Message, WireError};
use kvs::Kvs;
use std::collections::HashMap;

pub const KVSNAME_MAX: usize = 256;
pub const KEYLEN_MAX: usize = 64;
pub const VALLEN_MAX: usize = 1024;
/// Replies queued for a connection beyond which madrun stops reading its requests.
pub const OUTPUT_HIGH_WATER: usize = 256 * 1024;

pub type ConnId = u64;

/// Something the event loop must act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A rank asked to kill the job.
    Abort { rank: u32, code: i32, message: String },
    /// A connection sent something that breaks the protocol; `who` names it.
    Malformed { rank: Option<u32>, who: String, err: WireError },
}

#[derive(Debug)]
struct Conn {
    rank: Option<u32>,
    /// How to name the connection before it says which rank it is.
    peer: String,
    dec: Decoder,
    out: Vec<u8>,
}

#[derive(Clone, Debug, Default)]
struct RankState {
    /// Index of its job in `Server::jobs` (0: the job madrun started; then the spawned ones).
    job: usize,
    conn: Option<ConnId>,
    /// May identify itself over TCP (PMI_PORT).
    remote: bool,
    inited: bool,
    finalized: bool,
    /// Died while the job goes on (`-disable-auto-cleanup`): barriers no longer wait for it.
    dead: bool,
    /// Exited (whatever it said before): fine unless another rank of its job waits in a
    /// barrier it never entered.
    exited: bool,
}

/// A job of the universe (its ranks follow the previous jobs' in `Server::ranks`).
#[derive(Clone, Debug)]
struct JobInfo {
    kvsname: String,
    size: u32,
}

/// The PMI server state of the job and of the jobs it spawned (one key/value store for all:
/// their business cards are keyed by universe id).
#[derive(Debug)]
pub struct Server {
    /// The first job's size (remote ranks identify themselves within it).
    size: u32,
    jobs: Vec<JobInfo>,
    kvs: Kvs,
    /// A refused put was reported (once: a rank that fills the store would repeat it).
    kvs_full_reported: bool,
    /// Things to tell the user that do not fail the job: (rank, what).
    notices: Vec<(u32, String)>,
    ranks: Vec<RankState>,
    conns: HashMap<ConnId, Conn>,
    next_id: ConnId,
    /// Ranks in the current barrier, with their connection.
    barrier: Vec<(u32, ConnId)>,
    /// The name service (`publish_name`...).
    names: names::Names,
    /// Spawn requests waiting for the event loop (`spawn`).
    spawns: Vec<(ConnId, crate::pmi::spawn::SpawnRequest)>,
}

type Handled = Result<(), Event>;

impl Server {
    /// `remote[r]`: rank r connects over TCP and identifies itself.
    pub fn new(kvsname: &str, remote: Vec<bool>) -> Server {
        let ranks =
            remote.into_iter().map(|remote| RankState { remote, ..RankState::default() }).collect::<Vec<_>>();
        let kvsname: String = kvsname.chars().take(KVSNAME_MAX).collect();
        Server {
            size: ranks.len() as u32,
            jobs: vec![JobInfo { kvsname, size: ranks.len() as u32 }],
            kvs: Kvs::default(),
            kvs_full_reported: false,
            notices: Vec::new(),
            ranks,
            conns: HashMap::new(),
            next_id: 0,
            barrier: Vec::new(),
            names: names::Names::default(),
            spawns: Vec::new(),
        }
    }

    /// Stores a value that no rank may overwrite (the job key).
    pub fn preload(&mut self, key: &str, value: &str) {
        self.kvs.put_unbounded(key, value);
    }

    /// Notices for the user since the last call (they do not fail the job): (rank, what).
    pub fn take_notices(&mut self) -> Vec<(u32, String)> {
        std::mem::take(&mut self.notices)
    }

    /// Rank `rank` exited (harmless by itself: programs that never speak PMI, such as
    /// `madrun -n 2 hostname`, and ranks that finalized; see [`Server::blocked_barrier`]).
    pub fn exited(&mut self, rank: u32) {
        if let Some(r) = self.ranks.get_mut(rank as usize) {
            r.exited = true;
        }
    }

    /// A barrier that can no longer complete: `(gone, waiting)`, a rank that exited (and is not
    /// counted dead) while `waiting`, of the same job, is in the barrier.
    pub fn blocked_barrier(&self) -> Option<(u32, u32)> {
        if self.barrier.is_empty() {
            return None;
        }
        // One pass over the ranks (called at every turn of the event loop): usually none is gone.
        let mut gone = self.ranks.iter().enumerate().filter(|(_, r)| r.exited && !r.dead);
        gone.find_map(|(g, r)| {
            let waiting = self.barrier.iter().find(|&&(w, _)| self.ranks[w as usize].job == r.job)?;
            Some((g as u32, waiting.0))
        })
    }

    /// A new connection: a local rank's socket (`rank` known) or an authenticated TCP one.
    pub fn add_conn(&mut self, rank: Option<u32>, peer: String) -> ConnId {
        let id = self.next_id;
        self.next_id += 1;
        if let Some(r) = rank.and_then(|r| self.ranks.get_mut(r as usize)) {
            r.conn = Some(id);
        }
        self.conns.insert(id, Conn { rank, peer, dec: Decoder::new(), out: Vec::new() });
        id
    }

    pub fn conn_of(&self, rank: u32) -> Option<ConnId> {
        self.ranks.get(rank as usize).and_then(|r| r.conn)
    }

    pub fn conn_ids(&self) -> Vec<ConnId> {
        self.conns.keys().copied().collect()
    }

    /// The rank spoke PMI (it will be expected to finalize).
    pub fn inited(&self, rank: u32) -> bool {
        self.ranks.get(rank as usize).is_some_and(|r| r.inited)
    }

    pub fn finalized(&self, rank: u32) -> bool {
        self.ranks.get(rank as usize).is_some_and(|r| r.finalized)
    }

    /// How many reply bytes wait for a connection.
    pub fn pending(&self, id: ConnId) -> usize {
        self.conns.get(&id).map_or(0, |c| c.out.len())
    }

    /// Replies waiting to be written to a connection.
    pub fn output(&mut self, id: ConnId) -> Option<&mut Vec<u8>> {
        self.conns.get_mut(&id).map(|c| &mut c.out)
    }

    /// Bytes received from a connection: handles every complete request in them.
    pub fn input(&mut self, id: ConnId, data: &[u8]) -> Handled {
        let Some(c) = self.conns.get_mut(&id) else { return Ok(()) };
        c.dec.feed(data);
        loop {
            let Some(c) = self.conns.get_mut(&id) else { return Ok(()) };
            let framing = c.dec.framing;
            let msg = match c.dec.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => return Ok(()),
                Err(err) => return Err(self.malformed(id, err)),
            };
            match framing {
                Framing::V1 => self.handle_v1(id, msg)?,
                Framing::V2 => self.handle_v2(id, msg)?,
            }
        }
    }

    /// The peer closed the connection; a half-received request is reported if `check`.
    pub fn eof(&mut self, id: ConnId, check: bool) -> Handled {
        let result = match self.conns.get(&id) {
            Some(c) if check => c.dec.finish().map_err(|err| self.malformed(id, err)),
            _ => Ok(()),
        };
        self.remove(id);
        result
    }

    /// Forgets a connection (closed, or dropped by the event loop).
    pub fn remove(&mut self, id: ConnId) {
        if let Some(c) = self.conns.remove(&id)
            && let Some(r) = c.rank.and_then(|r| self.ranks.get_mut(r as usize))
            && r.conn == Some(id)
        {
            r.conn = None;
        }
        self.barrier.retain(|&(_, c)| c != id);
    }

    fn malformed(&self, id: ConnId, err: WireError) -> Event {
        let (rank, who) = match self.conns.get(&id) {
            Some(Conn { rank: Some(r), .. }) => (Some(*r), format!("rank {r}")),
            Some(c) => (None, format!("the PMI connection from {} (before it said its rank)", c.peer)),
            None => (None, "a closed PMI connection".to_string()),
        };
        Event::Malformed { rank, who, err }
    }

    fn bad(&self, id: ConnId, reason: impl Into<String>, m: &Message) -> Event {
        let framing = self.conns.get(&id).map_or(Framing::V1, |c| c.dec.framing);
        let quoted = match framing {
            Framing::V1 => m.encode_v1(),
            Framing::V2 => String::from_utf8_lossy(m.encode_v2().get(6..).unwrap_or_default()).into_owned(),
        };
        self.malformed(
            id,
            WireError { reason: reason.into(), quoted: crate::pmi::wire::quote(quoted.as_bytes()) },
        )
    }

    fn reply(&mut self, id: ConnId, m: Message) {
        if let Some(c) = self.conns.get_mut(&id) {
            match c.dec.framing {
                Framing::V1 => c.out.extend_from_slice(m.encode_v1().as_bytes()),
                Framing::V2 => c.out.extend_from_slice(&m.encode_v2()),
            }
        }
    }

    /// The job of a connection (the first job before it says its rank).
    fn job_of(&self, id: ConnId) -> &JobInfo {
        let job = self.rank_of(id).and_then(|r| self.ranks.get(r as usize)).map_or(0, |r| r.job);
        &self.jobs[job]
    }

    fn rank_of(&self, id: ConnId) -> Option<u32> {
        self.conns.get(&id).and_then(|c| c.rank)
    }

    fn require<'m>(&self, id: ConnId, m: &'m Message, key: &str) -> Result<&'m str, Event> {
        m.get(key).ok_or_else(|| self.bad(id, format!("{:?} request without {key:?}", m.cmd), m))
    }

    fn require_int(&self, id: ConnId, m: &Message, key: &str) -> Result<i64, Event> {
        let v = self.require(id, m, key)?;
        v.parse().map_err(|_| self.bad(id, format!("{key:?} is not an integer"), m))
    }

    /// The connection says it is rank `r` (initack, fullinit): checks it may be.
    fn identify(&mut self, id: ConnId, r: i64, m: &Message) -> Handled {
        let size = self.size;
        let Some(r) = u32::try_from(r).ok().filter(|&r| r < size) else {
            return Err(self.bad(id, format!("rank {r} is out of range (the job has {size} ranks)"), m));
        };
        match self.rank_of(id) {
            Some(x) if x == r => {}
            Some(x) => return Err(self.bad(id, format!("rank {x} claims to be rank {r}"), m)),
            None => {
                let st = &self.ranks[r as usize];
                if !st.remote {
                    return Err(self.bad(id, format!("rank {r} is not a remote rank"), m));
                }
                if st.conn.is_some() {
                    return Err(self.bad(id, format!("rank {r} is already connected"), m));
                }
                self.ranks[r as usize].conn = Some(id);
                if let Some(c) = self.conns.get_mut(&id) {
                    c.rank = Some(r);
                }
            }
        }
        self.ranks[r as usize].inited = true;
        Ok(())
    }

    fn handle_v1(&mut self, id: ConnId, m: Message) -> Handled {
        let rank = self.rank_of(id);
        let reply = match m.cmd.as_str() {
            "initack" => {
                let r = self.require_int(id, &m, "pmiid")?;
                self.identify(id, r, &m)?;
                let size = self.job_of(id).size;
                self.reply(id, Message::new("initack"));
                self.reply(id, Message::new("set").with("size", size));
                self.reply(id, Message::new("set").with("rank", r));
                Message::new("set").with("debug", 0)
            }
            "init" => return self.init(id, &m),
            _ if rank.is_none() => return Err(self.bad(id, "request before initack", &m)),
            "get_maxes" => Message::new("maxes")
                .with("kvsname_max", KVSNAME_MAX)
                .with("keylen_max", KEYLEN_MAX)
                .with("vallen_max", VALLEN_MAX),
            "get_appnum" => Message::new("appnum").with("appnum", 0),
            "get_my_kvsname" => Message::new("my_kvsname").with("kvsname", &self.job_of(id).kvsname),
            "get_universe_size" => Message::new("universe_size").with("size", self.job_of(id).size),
            "spawn" => return self.spawn_request(id, &m),
            "put" => {
                let (key, value) = (self.require(id, &m, "key")?, self.require(id, &m, "value")?);
                let r = match m.get("kvsname") {
                    Some(k) if k != self.job_of(id).kvsname => Err("unknown_kvsname"),
                    _ => self.kvs_put(id, key, value),
                };
                match r {
                    Ok(()) => Message::new("put_result").with("rc", 0).with("msg", "success"),
                    Err(e) => Message::new("put_result").with("rc", -1).with("msg", e),
                }
            }
            "get" => {
                let key = self.require(id, &m, "key")?;
                match self.kvs.get(key) {
                    Some(v) => {
                        Message::new("get_result").with("rc", 0).with("msg", "success").with("value", v)
                    }
                    None => Message::new("get_result")
                        .with("rc", -1)
                        .with("msg", format!("key_{key}_not_found"))
                        .with("value", "unknown"),
                }
            }
            "barrier_in" => return self.enter_barrier(id, &m),
            "publish_name" | "lookup_name" | "unpublish_name" => self.name_request(id, &m)?,
            "finalize" => {
                self.finalize(id);
                Message::new("finalize_ack")
            }
            "abort" => return Err(self.abort(id, &m, "message")),
            other => return Err(self.bad(id, format!("unknown PMI-1 command {other:?}"), &m)),
        };
        self.reply(id, reply);
        Ok(())
    }

    /// `init pmi_version=1|2`: PMI-2 switches the connection to v2 framing after the reply.
    fn init(&mut self, id: ConnId, m: &Message) -> Handled {
        let version = self.require_int(id, m, "pmi_version")?;
        let (v, sub, rc) = match version {
            1 => (1, 1, 0),
            2 => (2, 0, 0),
            _ => (1, 1, -1),
        };
        self.reply(
            id,
            Message::new("response_to_init")
                .with("pmi_version", v)
                .with("pmi_subversion", sub)
                .with("rc", rc),
        );
        if let Some(r) = self.rank_of(id) {
            self.ranks[r as usize].inited = true;
        }
        if version == 2
            && let Some(c) = self.conns.get_mut(&id)
        {
            c.dec.framing = Framing::V2;
        }
        Ok(())
    }

    fn handle_v2(&mut self, id: ConnId, m: Message) -> Handled {
        let rank = self.rank_of(id);
        let ok = |cmd: &str| Message::new(cmd).with("rc", 0);
        let reply = match m.cmd.as_str() {
            "fullinit" => {
                let r = self.require_int(id, &m, "pmirank")?;
                self.identify(id, r, &m)?;
                ok("fullinit-response")
                    .with("pmi-version", 2)
                    .with("pmi-subversion", 0)
                    .with("rank", r)
                    .with("size", self.job_of(id).size)
                    .with("appnum", 0)
                    .with("debugged", "FALSE")
                    .with("pmiverbose", "FALSE")
            }
            _ if rank.is_none() => return Err(self.bad(id, "request before fullinit", &m)),
            "job-getid" => ok("job-getid-response").with("jobid", &self.job_of(id).kvsname),
            "kvs-put" => {
                let (key, value) = (self.require(id, &m, "key")?, self.require(id, &m, "value")?);
                match self.kvs_put(id, key, value) {
                    Ok(()) => ok("kvs-put-response"),
                    Err(e) => Message::new("kvs-put-response").with("rc", -1).with("errmsg", e),
                }
            }
            "kvs-get" => {
                let key = self.require(id, &m, "key")?;
                match self.kvs.get(key) {
                    Some(v) => ok("kvs-get-response").with("found", "TRUE").with("value", v),
                    None => ok("kvs-get-response").with("found", "FALSE"),
                }
            }
            "kvs-fence" => return self.enter_barrier(id, &m),
            "info-getjobattr" | "info-getnodeattr" => {
                ok(&format!("{}-response", m.cmd)).with("found", "FALSE")
            }
            "finalize" => {
                self.finalize(id);
                ok("finalize-response")
            }
            "abort" => return Err(self.abort(id, &m, "msg")),
            other => return Err(self.bad(id, format!("unknown PMI-2 command {other:?}"), &m)),
        };
        self.reply(id, reply);
        Ok(())
    }

    /// A rank finalized: it is out of any barrier it entered and abandoned (a finalize fence
    /// given up on a failure notice), so its exit does not block the others' next barrier.
    fn finalize(&mut self, id: ConnId) {
        if let Some(r) = self.rank_of(id) {
            self.ranks[r as usize].finalized = true;
            self.barrier.retain(|&(b, _)| b != r);
        }
    }

    fn abort(&self, id: ConnId, m: &Message, msg_key: &str) -> Event {
        let Some(rank) = self.rank_of(id) else { return self.bad(id, "abort before saying its rank", m) };
        let code = m
            .get("exitcode")
            .and_then(|c| c.parse::<i32>().ok())
            .filter(|c| (1..=255).contains(c))
            .unwrap_or(1);
        let message = m
            .get(msg_key)
            .unwrap_or("")
            .chars()
            .take(512)
            .map(|c| if c.is_control() { '?' } else { c })
            .collect::<String>();
        Event::Abort { rank, code, message }
    }

    /// `barrier_in` / `kvs-fence`: released (each with its own framing) once all ranks are in.
    fn enter_barrier(&mut self, id: ConnId, m: &Message) -> Handled {
        let Some(rank) = self.rank_of(id) else {
            return Err(self.bad(id, "barrier before saying its rank", m));
        };
        if self.barrier.iter().any(|&(r, _)| r == rank) {
            return Err(self.bad(id, "entered the barrier twice", m));
        }
        self.barrier.push((rank, id));
        self.release_barrier(self.ranks[rank as usize].job);
        Ok(())
    }

    /// Rank `rank` died and its job goes on: the job's barriers complete without it, and the
    /// KVS key `PMI_dead_processes` (Hydra's) lists the job's dead ranks, comma-separated.
    pub fn mark_dead(&mut self, rank: u32) {
        let Some(r) = self.ranks.get_mut(rank as usize) else { return };
        r.dead = true;
        let job = r.job;
        self.barrier.retain(|&(b, _)| b != rank);
        let dead: Vec<String> = self
            .ranks
            .iter()
            .enumerate()
            .filter(|(_, r)| r.dead && r.job == job)
            .map(|(i, _)| i.to_string())
            .collect();
        self.kvs.put_unbounded("PMI_dead_processes", &dead.join(","));
        self.release_barrier(job);
    }

    /// Releases job `job`'s barrier once every live rank of that job is in it.
    fn release_barrier(&mut self, job: usize) {
        let live = self.ranks.iter().filter(|r| r.job == job && !r.dead).count();
        let in_job = |r: u32| self.ranks[r as usize].job == job;
        let entered = self.barrier.iter().filter(|&&(r, _)| in_job(r)).count();
        if entered > 0 && entered == live {
            let (done, waiting): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.barrier).into_iter().partition(|&(r, _)| in_job(r));
            self.barrier = waiting;
            for (_, c) in done {
                let v2 = self.conns.get(&c).is_some_and(|c| c.dec.framing == Framing::V2);
                let m = if v2 {
                    Message::new("kvs-fence-response").with("rc", 0)
                } else {
                    Message::new("barrier_out")
                };
                self.reply(c, m);
            }
        }
    }

    /// Stores a pair; values must be valid on both framings (no space, `;` or control).
    fn kvs_put(&mut self, id: ConnId, key: &str, value: &str) -> Result<(), &'static str> {
        let bad_char = |c: char| c.is_control() || c == ' ' || c == ';';
        if key.is_empty() || key.len() > KEYLEN_MAX || key.chars().any(|c| bad_char(c) || c == '=') {
            return Err("invalid_key");
        }
        if value.len() > VALLEN_MAX || value.chars().any(bad_char) {
            return Err("invalid_value");
        }
        if key == super::JOB_KEY_NAME {
            return Err("reserved_key");
        }
        self.kvs.put(key, value).map_err(|full| {
            if !self.kvs_full_reported
                && let Some(rank) = self.rank_of(id)
            {
                self.kvs_full_reported = true;
                let what = format!(
                    "the PMI key-value store is full ({} entries, {} bytes with their overhead; at most {} and {}): its put of {key:?} is refused, and so are later ones",
                    self.kvs.len(),
                    self.kvs.bytes(),
                    kvs::ENTRIES_MAX,
                    kvs::BYTES_MAX
                );
                self.notices.push((rank, what));
            }
            full.pmi_reason()
        })
    }
}

mod kvs;
mod names;
pub mod spawn;
#[cfg(test)]
mod tests;
