//! The core: gates (peers), sessions, the eager and rendezvous protocols, flow control (granted
//! by the receiver, enforced on receipt: `budget`), and the glue to drivers (as their [`Sink`])
//! and to pioman (one progression task per driver).
//!
//! Locks are per object — a gate's send side, a gate's large receives, a session's matching —
//! and none is held across a driver call that could call back into the core, nor while a
//! request completes. The core never sees MPI objects: madmpi maps communicators to sessions.

pub(crate) mod am;
mod budget;
mod buffers;
mod counters;
pub(crate) mod deliver;
mod gate;
#[cfg(all(test, not(loom)))]
mod lent_tests;
pub(crate) mod matching;
mod payload;
pub(crate) mod request;
pub(crate) mod session;
pub(crate) mod sessions;
mod slab;
pub mod wire;
mod work_queue;

use crate::bootstrap::{Bootstrap, Fence};
use crate::drivers::{self, BulkHeader, Driver, DriverEnv, LentPacket, Link, PeerId, SegmentMut, Sink};
use crate::strategies::{RailInfo, Strategy};
use gate::{Gate, Rail};
use payload::Payload;
use pioman::{BlockingWait, LtaskHandle, Options, Pioman, Poll, PollCtx, Source};
use request::Error;
use rustc_hash::FxHashMap as HashMap;
use session::{InBody, Incoming, SessionInner};
use std::borrow::Cow;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use work_queue::WorkQueue;

pub(crate) use counters::Counters;
pub use counters::DriverStats;
pub use gate::failover::Timings as FailoverTimings;
pub use gate::write_rdv::RdvWrites;

/// Settings (environment variables in brackets; builder values win).
#[derive(Clone)]
pub struct Config {
    /// Drivers to start, in order [`NMAD_DRIVERS`, comma-separated: `self`, `shm`, `tcp`,
    /// `tcp:IFACE`]. `None`: automatic — `self` for oneself, `shm` within a node, `tcp` between
    /// nodes. When given, every listed driver that reaches a peer is a rail to it.
    pub drivers: Option<Vec<String>>,
    /// [`NMAD_STRATEGY`: `default`, `aggreg` (default), `split_balance`]
    pub strategy: Arc<dyn Strategy>,
    /// Caps the drivers' eager thresholds [`NMAD_EAGER_LIMIT`, bytes].
    pub eager_limit: usize,
    /// Memory for unexpected messages, shared evenly by the peers as the credit each may use
    /// [`NMAD_UNEXPECTED_BUDGET`, bytes, default 64 MiB; at least 16 KiB per peer]. Enforced on
    /// receipt: a peer sending beyond its credit is failed.
    pub unexpected_budget: u64,
    /// Unmatched rendezvous requests a peer may have outstanding [`NMAD_RDV_SLOTS`, default 1024].
    pub rdv_slots: u64,
    /// When a receiver whose driver reads the sender's memory asks the sender to write instead,
    /// and how much [`NMAD_RDV_WRITES`, `NMAD_RDV_WRITE_SHARE`: see [`RdvWrites`]].
    pub rdv_writes: RdvWrites,
    /// A driver whose rails carry traffic only while every other rail to the peer is down
    /// [`NMAD_FALLBACK`: a driver spec such as `tcp:eth0`, the service network].
    pub fallback: Option<String>,
    /// Rail failover's timings [`NMAD_HEARTBEAT_MS`, `NMAD_RAIL_DEAD_MS`, … ; see
    /// `gate/failover.rs`]: gates with two or more network rails fail over; `None` turns it
    /// off [`NMAD_FAILOVER`: `0`].
    pub failover: Option<FailoverTimings>,
}

fn env_num(name: &str) -> Result<Option<u64>, String> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse::<u64>().map(Some).map_err(|_| format!("{name}={v:?}: expected a number")),
        Err(_) => Ok(None),
    }
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        let drivers = std::env::var("NMAD_DRIVERS")
            .ok()
            .map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect::<Vec<_>>())
            .filter(|v| !v.is_empty());
        Ok(Config {
            drivers,
            strategy: crate::strategies::from_env()?,
            eager_limit: env_num("NMAD_EAGER_LIMIT")?.map_or(usize::MAX, |v| v as usize),
            unexpected_budget: env_num("NMAD_UNEXPECTED_BUDGET")?.unwrap_or(64 << 20),
            rdv_slots: env_num("NMAD_RDV_SLOTS")?.unwrap_or(1024).max(1),
            rdv_writes: RdvWrites::from_env()?,
            fallback: std::env::var("NMAD_FALLBACK")
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty()),
            failover: match std::env::var("NMAD_FAILOVER") {
                Ok(v) if v.trim() == "0" => None,
                _ => Some(gate::failover::Timings::from_env()?),
            },
        })
    }
}

/// One rail to a peer ([`crate::Nmad::rail_status`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RailStatus {
    /// The driver's name (`tcp:rail1`).
    pub name: String,
    /// Not failed (or failed and re-admitted).
    pub up: bool,
    /// Used only while every other rail is down (`NMAD_FALLBACK`).
    pub fallback: bool,
    /// Carries traffic now (up, and not a fallback while another rail is up).
    pub in_use: bool,
    /// Bytes its driver sent, to every peer.
    pub bytes_sent: u64,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Memory held by unexpected (and early) messages now, and at most so far.
    pub unexpected_bytes: u64,
    pub peak_unexpected_bytes: u64,
    /// What the budget allows in all (credit granted to peers, plus rendezvous descriptors).
    pub budget: u64,
    /// Packets sent, and the chunks they carried (aggregation = chunks / packets).
    pub packets: u64,
    pub chunks: u64,
    /// Messages sent eagerly, and as rendezvous requests.
    pub eager_sent: u64,
    pub rendezvous_sent: u64,
    /// Rendezvous received whose sender was asked to write the data (the receive was matched
    /// beside the application's computation: see `write_rdv`).
    pub rendezvous_written: u64,
    /// Times sends to a peer had to wait for credit (no eager credit nor rendezvous slot left).
    pub credit_stalls: u64,
    /// Messages that arrived before their receive was posted.
    pub unexpected_messages: u64,
}

/// A peer's business cards, as published through the bootstrap.
#[derive(Clone, Debug, Default)]
struct Cards {
    credit: u64,
    slots: u64,
    /// The peer's node id (`node_id()` there; empty from a peer that did not say).
    node: String,
    by_driver: Vec<(String, String)>,
    /// As published (what [`Core::card_text`] hands on).
    text: String,
}

/// Messages for a session not created here yet, and who sent them (sorted: each sender is
/// charged one of its [`budget::UNKNOWN_SESSIONS`] once).
#[derive(Default)]
struct EarlySession {
    msgs: Vec<Incoming<'static>>,
    senders: Vec<PeerId>,
}

/// How long `finalize` waits for this process's output to leave it.
const FINALIZE_DRAIN: Duration = Duration::from_secs(10);

impl Cards {
    fn parse(v: &str) -> Result<Cards, String> {
        let mut c = Cards { text: v.to_string(), ..Cards::default() };
        for entry in v.split('|') {
            let (name, card) =
                entry.split_once('/').ok_or_else(|| format!("malformed card entry {entry:?}"))?;
            if name == "credit" {
                let (b, s) = card.split_once('/').ok_or("malformed credit entry")?;
                c.credit = b.parse().map_err(|_| "malformed credit")?;
                c.slots = s.parse().map_err(|_| "malformed slots")?;
            } else if name == "node" {
                c.node = card.to_string();
            } else {
                c.by_driver.push((name.to_string(), card.to_string()));
            }
        }
        Ok(c)
    }
}

pub(crate) struct Core {
    /// This process's peer id (`base` + its rank in the job).
    pub(crate) rank: PeerId,
    /// The job's size.
    pub(crate) size: u32,
    /// The peer id of the job's rank 0 (see `bootstrap::Universe`).
    pub(crate) base: PeerId,
    pub(crate) drivers: Vec<Arc<dyn Driver>>,
    explicit_drivers: bool,
    pub(crate) strategy: Arc<dyn Strategy>,
    pub(crate) pioman: Pioman,
    owns_pioman: bool,
    pub(crate) bootstrap: Arc<dyn Bootstrap>,
    config: Config,
    /// Credit we grant each peer.
    grant: u64,
    gates: Box<[OnceLock<Arc<Gate>>]>,
    /// Peers' business cards, read from the bootstrap once.
    cards: Box<[OnceLock<Arc<Cards>>]>,
    gate_creation: Mutex<()>,
    sessions: sessions::Sessions,
    /// Messages for sessions not created here yet (another rank created its communicator first).
    early: Mutex<HashMap<u32, EarlySession>>,
    /// Per closed session, the next sequence number expected from each peer: a session reopened
    /// with the same id (madmpi reuses context ids) continues where the gates' counters are.
    resume_order: Mutex<HashMap<u32, Vec<u32>>>,
    pub(crate) reads: WorkQueue<deliver::ReadJob>,
    /// Writes into peers' receive buffers they asked for (`write_rdv`).
    pub(crate) writes: WorkQueue<gate::write_rdv::WriteJob>,
    /// Active-message handlers and the AMs waiting for them.
    pub(crate) ams: am::AmRegistry,
    pub(crate) backlog: WorkQueue<PeerId>,
    tasks: Mutex<Vec<LtaskHandle>>,
    /// Each driver's task, for waiters to poll first (`Request::wait`).
    pollers: OnceLock<Box<[pioman::Poller]>>,
    pub(crate) finalizing: AtomicBool,
    /// Shut down: the failover monitor stops.
    pub(crate) stopped: AtomicBool,
    /// Rails failed and re-admitted, over every gate.
    pub(crate) rails_down: AtomicU64,
    pub(crate) rails_up: AtomicU64,
    /// Peers found failed so far (`Gate::fail`).
    pub(crate) peers_lost: AtomicU64,
    unexpected: AtomicU64,
    peak: AtomicU64,
    pub(crate) packets: AtomicU64,
    pub(crate) chunks: AtomicU64,
    pub(crate) counters: Counters,
}

impl Core {
    /// Starts the drivers, publishes the cards and registers the progression tasks. Collective:
    /// every process of the job calls it (it fences).
    pub(crate) fn start(
        bootstrap: Arc<dyn Bootstrap>,
        pioman: Option<Pioman>,
        config: Config,
    ) -> io::Result<Arc<Core>> {
        let universe = bootstrap.universe();
        // Peer ids are universe ids: this job's ranks start at `base`.
        let (rank, size) = (universe.base + bootstrap.rank(), bootstrap.size());
        let env = DriverEnv {
            rank,
            size: universe.capacity,
            job_key: bootstrap.job_key().clone(),
            node: drivers::node_id(),
            single_node: bootstrap.single_node(),
        };
        let explicit = config.drivers.is_some();
        let mut specs = config.drivers.clone().unwrap_or_else(|| vec!["shm".into(), "tcp".into()]);
        if !specs.iter().any(|s| s == "self") {
            specs.insert(0, "self".into());
        }
        if let Some(f) = &config.fallback {
            specs.retain(|s| s != f);
            specs.push(f.clone());
        }
        let mut drivers: Vec<Arc<dyn Driver>> = Vec::new();
        for spec in &specs {
            match drivers::by_spec(spec, &env) {
                Ok(d) => drivers.push(d),
                Err(e) if explicit => {
                    return Err(io::Error::new(e.kind(), format!("NMAD_DRIVERS: driver `{spec}`: {e}")));
                }
                Err(e) if size > 1 => log::warn!("rank {rank}: driver `{spec}` unavailable: {e}"),
                Err(_) => {}
            }
        }
        let peers = u64::from(size.saturating_sub(1).max(1));
        let grant = (config.unexpected_budget / peers).max(16 << 10);
        let mut card = format!("credit/{grant}/{}|node/{}", config.rdv_slots, env.node);
        for d in &drivers {
            card.push_str(&format!("|{}/{}", d.name(), d.card()));
        }
        bootstrap.put(&crate::bootstrap::card_key(rank), &card)?;
        bootstrap.fence()?;
        let (pioman, owns_pioman) = match pioman {
            Some(p) => (p, false),
            None => (Pioman::new()?, true),
        };
        // More ranks here than the machine has CPUs: waiting ranks should hand their core to
        // the ones they wait for (see pioman's adaptive policy).
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
        if bootstrap.local_size().is_some_and(|n| n > cpus) {
            pioman.set_oversubscribed(true);
        }
        let ndrivers = drivers.len();
        let core = Arc::new(Core {
            rank,
            size,
            drivers,
            explicit_drivers: explicit,
            strategy: config.strategy.clone(),
            pioman,
            owns_pioman,
            bootstrap,
            config,
            grant,
            base: universe.base,
            gates: (0..universe.capacity).map(|_| OnceLock::new()).collect(),
            cards: (0..universe.capacity).map(|_| OnceLock::new()).collect(),
            gate_creation: Mutex::new(()),
            sessions: sessions::Sessions::default(),
            early: Mutex::new(HashMap::default()),
            resume_order: Mutex::new(HashMap::default()),
            reads: WorkQueue::default(),
            writes: WorkQueue::default(),
            ams: am::AmRegistry::default(),
            backlog: WorkQueue::default(),
            tasks: Mutex::new(Vec::new()),
            pollers: OnceLock::new(),
            finalizing: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            rails_down: AtomicU64::new(0),
            rails_up: AtomicU64::new(0),
            peers_lost: AtomicU64::new(0),
            unexpected: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            packets: AtomicU64::new(0),
            chunks: AtomicU64::new(0),
            counters: Counters::new(ndrivers),
        });
        for (i, d) in core.drivers.iter().enumerate() {
            let probe = TaskProbe {
                driver: d.clone(),
                queues: [
                    core.reads.length(),
                    core.writes.length(),
                    core.ams.jobs.length(),
                    core.backlog.length(),
                ],
            };
            let task = DriverTask {
                core: Arc::downgrade(&core),
                driver: i,
                name: format!("nmad-{}", d.name()),
                probe,
            };
            let opts = Options { may_block: d.caps().blocking, ..Options::default() };
            let h = core.pioman.register(Arc::new(task), opts)?;
            core.tasks.lock().unwrap().push(h);
        }
        let pollers = core.tasks.lock().unwrap().iter().map(|h| h.poller()).collect();
        let _ = core.pollers.set(pollers);
        gate::failover::start_monitor(&core)?;
        Ok(core)
    }

    // ------------------------------------------------------------ gates

    /// The driver a thread waiting on traffic from `peer` polls first: rail 0's, if that driver
    /// polls cheaply and the gate exists.
    pub(crate) fn first_driver(&self, peer: PeerId) -> Option<(usize, PeerId)> {
        let d = self.made_gate(peer)?.rails.first()?.driver;
        self.drivers[d].polls_cheaply().then_some((d, peer))
    }

    /// Polls driver `driver`'s link to `peer` alone if it has something, then what deliveries
    /// left to do (see `Driver::poll_peer`): a waiter's look at what it waits on. Rendezvous
    /// reads and writes run at every look, as at every poll of the driver's task (a sender
    /// waits on its half of a written rendezvous). `None` when it did neither, else the events.
    pub(crate) fn poll_peer(&self, driver: usize, peer: PeerId) -> Option<usize> {
        let mut sink = CoreSink { core: self, driver };
        let polled = self.drivers[driver].poll_peer(peer, &mut sink);
        if polled.is_none() && !self.work_pending() {
            return None;
        }
        Some(polled.unwrap_or(0) + self.after_poll())
    }

    /// Whether [`Core::after_poll`] has something to do (loads only).
    fn work_pending(&self) -> bool {
        !self.reads.is_empty()
            || !self.writes.is_empty()
            || !self.ams.jobs.is_empty()
            || !self.backlog.is_empty()
    }

    /// What a driver's poll leaves to do: reads of rendezvous data, writes, active messages,
    /// backlogged gates. Returns the events.
    fn after_poll(&self) -> usize {
        let mut n = 0;
        if !self.reads.is_empty() {
            n += deliver::run_reads(self);
        }
        if !self.writes.is_empty() {
            n += gate::write_rdv::run_writes(self);
        }
        if !self.ams.jobs.is_empty() {
            n += am::run_ams(self);
        }
        if !self.backlog.is_empty() {
            n += self.flush_backlog();
        }
        n
    }

    /// The progression task of driver `driver`, for a waiter to poll first.
    pub(crate) fn poller(&self, driver: usize) -> Option<&pioman::Poller> {
        self.pollers.get()?.get(driver)
    }

    /// `peer`'s gate if it was made (no lock, no reference count).
    pub(crate) fn made_gate(&self, peer: PeerId) -> Option<&Arc<Gate>> {
        self.gates.get(peer as usize)?.get()
    }

    /// The gate to `peer`: borrowed if it was made (no reference count), else made now.
    pub(crate) fn gate_ref(&self, peer: PeerId) -> Result<GateRef<'_>, Error> {
        match self.made_gate(peer) {
            Some(g) => Ok(GateRef::Made(g)),
            None => self.gate(peer).map(GateRef::New),
        }
    }

    /// The gate to `peer`, created on first use from its published cards.
    pub(crate) fn gate(&self, peer: PeerId) -> Result<Arc<Gate>, Error> {
        let slot = self.gates.get(peer as usize).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "peer {peer} is beyond the {} this process may reach",
                self.gates.len()
            ))
        })?;
        if let Some(g) = slot.get() {
            return Ok(g.clone());
        }
        let _guard = self.gate_creation.lock().unwrap();
        if let Some(g) = slot.get() {
            return Ok(g.clone());
        }
        let g = Arc::new(self.new_gate(peer)?);
        let _ = slot.set(g.clone());
        Ok(g)
    }

    /// `peer`'s business cards (read from the bootstrap on first use).
    fn cards(&self, peer: PeerId) -> Result<Arc<Cards>, Error> {
        let slot = self.cards.get(peer as usize).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "peer {peer} is beyond the {} this process may reach",
                self.cards.len()
            ))
        })?;
        if let Some(c) = slot.get() {
            return Ok(c.clone());
        }
        let key = crate::bootstrap::card_key(peer);
        let fail = |m: String| Error::PeerFailed { peer, reason: m };
        let v = marcel::blocking(|| self.bootstrap.get(&key))
            .map_err(|e| fail(format!("reading its business card: {e}")))?
            .ok_or_else(|| fail("it published no business card".into()))?;
        let cards = Cards::parse(&v).map_err(|e| fail(format!("its business card: {e}")))?;
        Ok(slot.get_or_init(|| Arc::new(cards)).clone())
    }

    /// `peer`'s cards as published, to hand on to processes that do not share this bootstrap's
    /// store (the other job of a spawn under Hydra).
    pub(crate) fn card_text(&self, peer: PeerId) -> Result<String, Error> {
        Ok(self.cards(peer)?.text.clone())
    }

    /// Learns `peer`'s cards from elsewhere than the bootstrap (they came from another job):
    /// kept unless its cards were read already. Untrusted: parsed, and `peer` bounded.
    pub(crate) fn learn_cards(&self, peer: PeerId, text: &str) -> Result<(), Error> {
        let slot = self.cards.get(peer as usize).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "peer {peer} is beyond the {} this process may reach",
                self.cards.len()
            ))
        })?;
        let cards =
            Cards::parse(text).map_err(|e| Error::Protocol(format!("peer {peer}'s business card: {e}")))?;
        let _ = slot.set(Arc::new(cards));
        Ok(())
    }

    /// The node id `peer` published (as [`drivers::node_id`] there).
    pub(crate) fn node_of(&self, peer: PeerId) -> Result<String, Error> {
        if peer == self.rank {
            return Ok(drivers::node_id());
        }
        let c = self.cards(peer)?;
        if c.node.is_empty() {
            return Err(Error::PeerFailed { peer, reason: "its business card names no node".into() });
        }
        Ok(c.node.clone())
    }

    fn new_gate(&self, peer: PeerId) -> Result<Gate, Error> {
        let fail = |m: String| Error::PeerFailed { peer, reason: m };
        let cards = self.cards(peer)?;
        let mut rails: Vec<Rail> = Vec::new();
        for (i, d) in self.drivers.iter().enumerate() {
            let is_self = d.name() == "self";
            if is_self != (peer == self.rank) {
                continue;
            }
            let Some((_, card)) = cards.by_driver.iter().find(|(n, _)| n == d.name()) else { continue };
            if !d.reaches(card) {
                continue;
            }
            let info =
                RailInfo { name: d.name().to_string(), caps: d.caps(), profile: d.profile(), busy: false };
            let rail = Rail::new(i, info, card.clone(), peer);
            let fallback = self.config.fallback.as_deref() == Some(d.name());
            rails.push(if fallback { rail.into_fallback() } else { rail });
        }
        if !self.explicit_drivers && rails.iter().any(|r| r.info.name == "shm") {
            rails.retain(|r| r.info.name == "shm"); // same node: shared memory only
        }
        rails.sort_by(|a, b| {
            (a.info.profile.latency_ns, &a.info.name).cmp(&(b.info.profile.latency_ns, &b.info.name))
        });
        if rails.is_empty() {
            let ours: Vec<&str> = self.drivers.iter().map(|d| d.name()).collect();
            let theirs: Vec<&str> = cards.by_driver.iter().map(|(n, _)| n.as_str()).collect();
            return Err(fail(format!("no driver reaches it (ours: {ours:?}, its: {theirs:?})")));
        }
        let credit = if cards.credit == 0 { self.grant } else { cards.credit };
        let slots = if cards.slots == 0 { self.config.rdv_slots } else { cards.slots };
        let grant = (self.grant, self.config.rdv_slots);
        let failover = self.config.failover.filter(|_| gate::failover::Failover::wanted(&rails));
        Ok(Gate::new(peer, rails, (credit, slots), grant, self.config.eager_limit, failover))
    }

    pub(crate) fn failed_peers(&self) -> Vec<PeerId> {
        (0..self.size).filter(|&p| self.existing_gate(p).is_some_and(|g| g.failure().is_some())).collect()
    }

    fn existing_gate(&self, peer: PeerId) -> Option<Arc<Gate>> {
        self.gates.get(peer as usize).and_then(|g| g.get().cloned())
    }

    pub(crate) fn rail_status(&self, peer: PeerId) -> Result<Vec<RailStatus>, Error> {
        let g = self.gate(peer)?;
        Ok((0..g.rails.len())
            .map(|i| {
                let r = &g.rails[i];
                RailStatus {
                    name: r.info.name.clone(),
                    up: !r.is_down(),
                    fallback: r.fallback,
                    in_use: g.failure().is_none()
                        && if g.failover.is_some() { g.usable(i) } else { !r.is_down() },
                    bytes_sent: self.counters.driver(r.driver).1,
                }
            })
            .collect())
    }

    /// Rails to `peer` (names, in latency order), connecting nothing.
    pub(crate) fn rails_to(&self, peer: PeerId) -> Result<Vec<String>, Error> {
        Ok(self.gate(peer)?.rails.iter().map(|r| r.info.name.clone()).collect())
    }

    /// Retries gates whose link was busy.
    fn flush_backlog(&self) -> usize {
        let peers = self.backlog.take_all();
        let n = peers.len();
        for p in peers {
            if let Some(g) = self.existing_gate(p) {
                g.backlogged.store(false, Release);
                g.flush(self);
            }
        }
        n
    }

    pub(crate) fn fail_posted_for(&self, peer: PeerId, err: &Error) {
        for s in self.sessions.all() {
            s.fail_posted_for(peer, err);
        }
    }

    // ------------------------------------------------------------ sessions

    pub(crate) fn session(self: &Arc<Self>, id: u32) -> Arc<SessionInner> {
        if let Some(s) = self.sessions.get(id) {
            return s;
        }
        let (s, early) = {
            // Sessions are added under this lock (`incoming` looks again under it).
            let mut early = self.early.lock().unwrap();
            if let Some(s) = self.sessions.get(id) {
                return s;
            }
            let s = Arc::new(SessionInner::new(id, self.clone()));
            self.sessions.insert(id, s.clone());
            (s, early.remove(&id).unwrap_or_default())
        };
        for &p in &early.senders {
            if let Some(g) = self.existing_gate(p) {
                g.allowance.leave_unknown_session();
            }
        }
        for inc in early.msgs {
            self.budget_sub(inc.footprint());
            let Ok(g) = self.gate(inc.from) else { continue };
            if g.failure().is_some() {
                continue; // a violation of the peer dropped the rest
            }
            if let Err(what) = s.deliver(&g, inc) {
                g.violation(self, &what);
            }
        }
        s
    }

    /// Keeps a closed session's receive counters for its next incarnation.
    pub(crate) fn save_order(&self, id: u32, expected: Vec<u32>) {
        if expected.iter().any(|&e| e != 0) {
            self.resume_order.lock().unwrap().insert(id, expected);
        }
    }

    /// The receive counters a new incarnation of session `id` starts from.
    pub(crate) fn take_order(&self, id: u32) -> Vec<u32> {
        self.resume_order.lock().unwrap().remove(&id).unwrap_or_default()
    }

    pub(crate) fn close_session(&self, id: u32) {
        if let Some(s) = self.sessions.remove(id) {
            s.close();
        }
    }

    /// A message for a session: deliver it, or keep it until the session exists. `Err`: the
    /// peer broke the protocol (see [`budget`]).
    #[inline(always)]
    fn incoming(&self, gate: &Gate, inc: Incoming<'_>) -> Result<(), String> {
        let id = inc.h.session;
        if let Some(s) = self.sessions.get(id) {
            return s.deliver(gate, inc);
        }
        // Sessions are added under this lock: look again under it.
        let mut early = self.early.lock().unwrap();
        if let Some(s) = self.sessions.get(id) {
            drop(early);
            return s.deliver(gate, inc);
        }
        let e = early.entry(id).or_default();
        if let Err(at) = e.senders.binary_search(&inc.from) {
            gate.allowance.enter_unknown_session(id)?;
            e.senders.insert(at, inc.from);
        }
        self.budget_add(inc.footprint());
        e.msgs.push(inc.into_owned());
        Ok(())
    }

    /// Drops what `gate`'s peer made this process hold (it broke the protocol): its messages
    /// waiting for their session, for an earlier sequence number, or unmatched.
    fn purge(&self, gate: &Gate) {
        let peer = gate.peer;
        let mut bytes = 0;
        self.early.lock().unwrap().retain(|_, e| {
            if let Ok(at) = e.senders.binary_search(&peer) {
                e.senders.remove(at);
                gate.allowance.leave_unknown_session();
                e.msgs.retain(|m| {
                    let keep = m.from != peer;
                    if !keep {
                        bytes += m.footprint();
                    }
                    keep
                });
            }
            !e.msgs.is_empty()
        });
        for s in self.sessions.all() {
            bytes += s.purge(peer);
        }
        self.budget_sub(bytes);
    }

    // ------------------------------------------------------------ arrivals

    /// The gate a packet from `from` arrives on (made on first use), unless the packet is to
    /// be dropped: the peer is unknown, or its gate failed (it broke the protocol, or a late
    /// packet on a rail of a lost peer).
    fn arrival_gate(&self, from: PeerId) -> Option<GateRef<'_>> {
        let gate = match self.gate_ref(from) {
            Ok(g) => g,
            Err(e) => {
                static DROPPED: pm2_log::RateLimited = pm2_log::RateLimited::new(Duration::from_secs(5));
                DROPPED.note(|n| {
                    log::warn!(
                        "rank {}: packet from rank {from} dropped: {e}{}",
                        self.rank,
                        pm2_log::repeats(n)
                    )
                });
                return None;
            }
        };
        gate.failed.get().is_none().then_some(gate)
    }

    /// A packet on a failover gate, through driver `driver`: its rail was heard; a heartbeat is
    /// answered on it; an acknowledgement owed for long enough goes back.
    fn on_failover_packet(&self, gate: &Gate, driver: usize, from: PeerId, bytes: &[u8]) {
        let Some(f) = &gate.failover else { return };
        let now = gate::failover::now_us();
        let rail = gate.rails.iter().position(|r| r.driver == driver);
        if let Some(rail) = rail {
            f.heard(rail, now);
        }
        if bytes == wire::PING_PACKET || bytes == wire::PONG_PACKET {
            if let Some(rail) = rail {
                gate.on_heartbeat(rail, bytes == wire::PING_PACKET);
            }
            return;
        }
        // The gate was looked up by the caller: only its failure is checked again here. A
        // numbered packet is handed over in its number's order, once.
        let deliver = |bytes: &[u8]| {
            if gate.failed.get().is_none() {
                self.on_rest(gate, from, bytes, 0);
            }
        };
        match wire::packet_number(bytes) {
            Some(n) => _ = f.arrived(n, bytes, deliver),
            None => deliver(bytes),
        }
        if f.ack_due(now) {
            gate.flush(self);
        }
    }

    fn on_packet(&self, from: PeerId, bytes: &[u8]) {
        if let Some(gate) = self.arrival_gate(from) {
            self.on_rest(&gate, from, bytes, 0);
        }
    }

    /// A packet lent by its driver (`Sink::packet_lent`): its chunk headers are copied out a
    /// window at a time and decoded from the copy; the payload of a DATA chunk that goes past
    /// its window stays in the packet until it is copied to where it belongs.
    fn on_lent_packet(&self, from: PeerId, packet: &dyn LentPacket) {
        /// Bytes copied out at a time: DATA headers and the usual control chunks fit.
        const WINDOW: usize = 64;
        let Some(gate) = self.arrival_gate(from) else { return };
        let len = packet.len();
        let mut window = [0u8; WINDOW];
        let mut at = 0;
        while at < len {
            let n = (len - at).min(WINDOW);
            packet.read(at, &mut window[..n]);
            let w = &window[..n];
            if n == len - at || at == 0 && w[0] != wire::VERSION {
                // The rest fits in the window (or the packet is malformed: reported from it).
                return self.on_rest(&gate, from, w, at);
            }
            let skip = usize::from(at == 0);
            match wire::first_in_window(&w[skip..]) {
                wire::Windowed::Chunk(c, used) => {
                    if !self.on_chunk(&gate, from, c) {
                        return;
                    }
                    at += skip + used;
                }
                wire::Windowed::DataPast { h, cookie, used, len: bytes } => {
                    let start = at + skip + used;
                    let end = usize::try_from(bytes).ok().and_then(|b| start.checked_add(b));
                    let Some(end) = end.filter(|&e| e <= len) else {
                        let e = wire::DecodeError { at: start, what: "length beyond the end of the packet" };
                        return gate.fail(self, &format!("{e}"));
                    };
                    let payload = Payload::Lent { packet, at: start, len: end - start };
                    if !self.on_chunk_data(&gate, from, h, cookie, payload) {
                        return;
                    }
                    at = end;
                }
                wire::Windowed::Cut => break,
            }
        }
        if at < len {
            // A chunk header longer than the window: the rest is decoded from one copy.
            let mut rest = vec![0; len - at];
            packet.read(at, &mut rest);
            self.on_rest(&gate, from, &rest, at);
        }
    }

    /// The chunks of `bytes`, the part of a packet from byte `at` (0: the whole packet), in
    /// order, until one breaks the protocol.
    fn on_rest(&self, gate: &Gate, from: PeerId, bytes: &[u8], at: usize) {
        if at == 0
            && let Some(wire::SmallPacket { h, payload, credit }) = wire::small_packet(bytes)
        {
            // The chunks in the order the general decoder gives them.
            let data = Payload::Bytes(Cow::Borrowed(payload));
            if self.on_chunk_data(gate, from, h, 0, data)
                && let Some((credit, slots)) = credit
            {
                gate.add_credit(self, credit, slots);
            }
            return;
        }
        let chunks = if at == 0 { wire::Decoder::new(bytes) } else { Ok(wire::Decoder::rest(bytes)) };
        let fail = |e: wire::DecodeError| {
            let e = wire::DecodeError { at: at + e.at, ..e };
            gate.fail(self, &format!("{e}"));
        };
        let chunks = match chunks {
            Ok(chunks) => chunks,
            Err(e) => return fail(e),
        };
        for c in chunks {
            match c {
                Ok(c) => {
                    if !self.on_chunk(gate, from, c) {
                        return;
                    }
                }
                Err(e) => return fail(e),
            }
        }
    }

    /// An eager message's chunk; `false` if it broke the protocol (the gate failed).
    fn on_chunk_data(
        &self,
        gate: &Gate,
        from: PeerId,
        h: wire::MsgHeader,
        cookie: u64,
        payload: Payload<'_>,
    ) -> bool {
        // An arrival is charged to the peer's credit before anything is kept of it.
        let arrival = gate.allowance.charge_eager(payload.len());
        let body = InBody::Data { cookie, payload };
        if let Err(what) = arrival.and_then(|()| self.incoming(gate, Incoming { from, h, body })) {
            gate.violation(self, &what);
            return false;
        }
        true
    }

    /// One chunk; `false` if it broke the protocol (the gate failed: the rest is dropped).
    fn on_chunk(&self, gate: &Gate, from: PeerId, c: wire::Chunk<'_>) -> bool {
        let r = match c {
            wire::Chunk::Data { h, cookie, payload } => {
                return self.on_chunk_data(gate, from, h, cookie, Payload::Bytes(Cow::Borrowed(payload)));
            }
            wire::Chunk::Rdv { h, total, cookie, header, remote } => {
                // Memory exposed through a rail we do not share is read some other way: bulk.
                let remote = remote.and_then(|r| {
                    let rail = gate.rail_by_name(r.rail)?;
                    Some(matching::Remote { rail, key: r.key.to_vec() })
                });
                let body = InBody::Rdv { total, cookie, header: Cow::Borrowed(header), remote };
                let arrival = gate.allowance.charge_rdv();
                if let Err(what) = arrival.and_then(|()| self.incoming(gate, Incoming { from, h, body })) {
                    gate.violation(self, &what);
                    return false;
                }
                Ok(())
            }
            wire::Chunk::Rtr { cookie, recv_cookie, accepted, pieces } => {
                gate.on_rtr(self, cookie, recv_cookie, accepted, &pieces)
            }
            wire::Chunk::Rtw { cookie, recv_cookie, accepted, written, remote } => {
                gate.on_rtw(self, cookie, recv_cookie, accepted, written, remote.rail, remote.key)
            }
            wire::Chunk::Written { recv_cookie } => gate.on_written(self, recv_cookie),
            wire::Chunk::Fin { cookie } | wire::Chunk::Ack { cookie } => gate.on_answer(self, cookie),
            wire::Chunk::Nak { cookie } => gate.on_refused(cookie),
            wire::Chunk::Credit { bytes, slots } => {
                gate.add_credit(self, bytes, slots);
                Ok(())
            }
            // Rail failover: read before the packet is handed over (`on_failover_packet`).
            wire::Chunk::Seq { .. } => Ok(()),
            wire::Chunk::GateAck(bytes) => match crate::reliable::Ack::decode(bytes) {
                Some((ack, _)) => {
                    gate.on_gate_ack(self, &ack);
                    Ok(())
                }
                None => Err("malformed gate acknowledgement".to_string()),
            },
            // Answered where it arrives (`CoreSink::packet`, which knows the rail).
            wire::Chunk::Heartbeat(_) => Ok(()),
            wire::Chunk::RailDown { rail } => {
                gate.on_rail_down(self, rail);
                Ok(())
            }
            // Charged like eager data; its handler runs later, outside this driver callback.
            wire::Chunk::Am { handler, header, payload } => {
                let arrival = gate.allowance.charge_eager(header.len() + payload.len());
                if let Err(what) = arrival.and_then(|()| self.ams.arrived(from, handler, header, payload)) {
                    gate.violation(self, &what);
                    return false;
                }
                Ok(())
            }
        };
        if let Err(e) = r {
            static IGNORED: pm2_log::RateLimited = pm2_log::RateLimited::new(Duration::from_secs(5));
            IGNORED.note(|n| {
                log::warn!("rank {}: from rank {from}: {e} (ignored){}", self.rank, pm2_log::repeats(n))
            });
        }
        true
    }

    // ------------------------------------------------------------ budget and stats

    pub(crate) fn budget_add(&self, n: u64) {
        let now = self.unexpected.fetch_add(n, Relaxed) + n;
        self.peak.fetch_max(now, Relaxed);
    }

    pub(crate) fn budget_sub(&self, n: u64) {
        self.unexpected.fetch_sub(n, Relaxed);
    }

    pub(crate) fn stats(&self) -> Stats {
        let peers = u64::from(self.size.saturating_sub(1).max(1));
        Stats {
            unexpected_bytes: self.unexpected.load(Relaxed),
            peak_unexpected_bytes: self.peak.load(Relaxed),
            budget: peers.saturating_mul(budget::per_peer(self.grant, self.config.rdv_slots)),
            packets: self.packets.load(Relaxed),
            chunks: self.chunks.load(Relaxed),
            eager_sent: self.counters.eager_sent.load(Relaxed),
            rendezvous_sent: self.counters.rdv_sent.load(Relaxed),
            rendezvous_written: self.counters.rdv_written.load(Relaxed),
            credit_stalls: self.counters.credit_stalls.load(Relaxed),
            unexpected_messages: self.counters.unexpected_messages.load(Relaxed),
        }
    }

    pub(crate) fn driver_stats(&self) -> Vec<DriverStats> {
        (self.drivers.iter().enumerate())
            .map(|(i, d)| {
                let (packets, bytes, bytes_received) = self.counters.driver(i);
                let protocol = d.protocol_stats();
                DriverStats { name: d.name().to_string(), packets, bytes, bytes_received, protocol }
            })
            .collect()
    }

    // ------------------------------------------------------------ end

    /// Collective end: every rank gets what it sent out of the process, then links close
    /// quietly.
    pub(crate) fn finalize(&self) -> io::Result<()> {
        let r = self.finalize_fence();
        self.shutdown();
        match r? {
            Fence::Done => self.bootstrap.finalize(),
            Fence::ProcessFailed => {
                let _ = self.bootstrap.finalize();
                Err(io::Error::other(
                    "finalize: the launcher reported a process of the job ended without finalizing \
                     (its fence can never complete)",
                ))
            }
        }
    }

    /// The first half of finalize: drains this process's output, then fences with the whole
    /// job unless the launcher reports that a process ended without finalizing (Hydra's fence
    /// would wait for it forever): then the caller synchronizes the survivors itself and ends
    /// with [`Core::finalize_survivors`], else with [`Core::finalize_fenced`].
    pub(crate) fn finalize_fence(&self) -> io::Result<Fence> {
        self.finalizing.store(true, Relaxed);
        self.drain_output(FINALIZE_DRAIN);
        if self.size > 1 {
            marcel::blocking(|| self.bootstrap.fence_unless_failed())
        } else {
            Ok(Fence::Done)
        }
    }

    /// The second half of finalize, after [`Core::finalize_fence`] completed.
    pub(crate) fn finalize_fenced(&self) -> io::Result<()> {
        self.shutdown();
        self.bootstrap.finalize()
    }

    /// End after process failures: the caller synchronized the survivors itself (a launcher's
    /// fence may wait for the dead forever: Hydra's does); links close quietly.
    pub(crate) fn finalize_survivors(&self) -> io::Result<()> {
        self.finalizing.store(true, Relaxed);
        self.shutdown();
        self.bootstrap.finalize()
    }

    /// Progresses until what this process handed to its gates and links (answers the peers wait
    /// for, packet tails and bulk data a driver still holds, bytes the peer has not acknowledged)
    /// has left it, or `limit` passes: a peer of another job (a spawned child, a parent) may
    /// still read what we sent after we exit, but not what we never wrote.
    pub(crate) fn drain_output(&self, limit: Duration) {
        let end = Instant::now() + limit;
        loop {
            let mut pending = false;
            for g in self.gates.iter().filter_map(OnceLock::get) {
                pending |= g.output_pending(self);
            }
            if !pending {
                return;
            }
            if Instant::now() >= end {
                let what: Vec<String> = self
                    .gates
                    .iter()
                    .filter_map(OnceLock::get)
                    .filter(|g| g.output_pending(self))
                    .map(|g| g.describe_pending())
                    .collect();
                log::warn!(
                    "rank {}: finalize: output still pending after {limit:?} ({})",
                    self.rank,
                    what.join("; ")
                );
                return;
            }
            self.pioman.progress();
            marcel::yield_now();
        }
    }

    pub(crate) fn shutdown(&self) {
        self.finalizing.store(true, Relaxed);
        self.stopped.store(true, Relaxed);
        for t in self.tasks.lock().unwrap().drain(..) {
            t.remove();
        }
        for d in &self.drivers {
            d.shutdown();
        }
        for s in self.sessions.drain() {
            s.close();
        }
        if self.owns_pioman {
            self.pioman.shutdown();
        }
    }
}

/// What a driver's poll reports to.
struct CoreSink<'a> {
    core: &'a Core,
    driver: usize,
}

/// A gate: a made one, borrowed, or one made for the caller ([`Core::gate_ref`]).
pub(crate) enum GateRef<'a> {
    Made(&'a Arc<Gate>),
    New(Arc<Gate>),
}

impl std::ops::Deref for GateRef<'_> {
    type Target = Gate;

    fn deref(&self) -> &Gate {
        match self {
            GateRef::Made(g) => g,
            GateRef::New(g) => g,
        }
    }
}

impl Sink for CoreSink<'_> {
    fn link_up(&mut self, link: Arc<dyn Link>) {
        match self.core.gate(link.peer()) {
            Ok(g) => {
                if let Some(i) = g.rails.iter().position(|r| r.driver == self.driver)
                    && g.rails[i].adopt(link, g.failover.is_some())
                {
                    g.rail_back(self.core, i, "the peer reconnected");
                }
            }
            Err(e) => log::warn!("rank {}: connection from rank {}: {e}", self.core.rank, link.peer()),
        }
    }

    fn packet(&mut self, from: PeerId, bytes: &[u8]) {
        self.core.counters.received(self.driver, bytes.len());
        match self.core.made_gate(from) {
            Some(g) if g.failover.is_some() => self.core.on_failover_packet(g, self.driver, from, bytes),
            // `Core::on_packet` without a second look for the gate.
            Some(g) if g.failed.get().is_none() => self.core.on_rest(g, from, bytes, 0),
            Some(_) => {}
            None => self.core.on_packet(from, bytes),
        }
    }

    fn packet_lent(&mut self, from: PeerId, packet: &dyn LentPacket) {
        self.core.counters.received(self.driver, packet.len());
        self.core.on_lent_packet(from, packet);
    }

    fn bulk_dest(&mut self, from: PeerId, hdr: &BulkHeader, dest: &mut Vec<SegmentMut>) -> bool {
        self.core.existing_gate(from).is_some_and(|g| deliver::bulk_dest(&g, hdr, dest))
    }

    fn bulk_done(&mut self, from: PeerId, hdr: &BulkHeader) {
        self.core.counters.received(self.driver, hdr.len as usize);
        if let Some(g) = self.core.existing_gate(from) {
            if let Some(f) = &g.failover
                && let Some(rail) = g.rails.iter().position(|r| r.driver == self.driver)
            {
                f.heard(rail, gate::failover::now_us());
            }
            deliver::bulk_done(self.core, &g, hdr);
        }
    }

    fn bulk_sent(&mut self, to: PeerId, token: u64) {
        if let Some(g) = self.core.existing_gate(to) {
            g.on_piece_done(self.core, token, self.driver);
        }
    }

    fn link_failed(&mut self, peer: PeerId, error: io::Error) {
        if let Some(g) = self.core.existing_gate(peer) {
            let name = self.core.drivers[self.driver].name();
            g.link_failed(self.core, self.driver, &format!("{name}: {error}"));
        }
    }
}

thread_local! {
    /// Drivers (by index, below 64) this thread armed for urgent packets only: its disarm
    /// must be of the same kind.
    static ARMED_FOR_URGENT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Records how this thread arms `driver` (for urgent packets only if `lazy` and the driver
/// has a bit); returns whether for urgent packets only.
fn armed_for_urgent(driver: usize, lazy: bool) -> bool {
    let Some(bit) = 1u64.checked_shl(driver as u32) else { return false };
    let armed = ARMED_FOR_URGENT.get();
    ARMED_FOR_URGENT.set(if lazy { armed | bit } else { armed & !bit });
    lazy
}

/// Whether this thread armed `driver` for urgent packets only; forgets it.
fn disarmed_for_urgent(driver: usize) -> bool {
    let Some(bit) = 1u64.checked_shl(driver as u32) else { return false };
    let armed = ARMED_FOR_URGENT.get();
    ARMED_FOR_URGENT.set(armed & !bit);
    armed & bit != 0
}

/// The progression task of one driver: polls it, runs the direct reads and retries busy gates.
struct DriverTask {
    core: Weak<Core>,
    driver: usize,
    name: String,
    probe: TaskProbe,
}

/// What a [`DriverTask`]'s probe reads, held apart from the core: a probe must not upgrade the
/// core's weak reference (two atomic read-modify-writes on a shared line, the cost of the
/// probe ten times over). The driver outlives the core by the task's life at most (the core
/// shuts it down before removing its tasks).
struct TaskProbe {
    driver: Arc<dyn Driver>,
    /// The lengths of the core's reads, writes, active messages and backlogged gates (the
    /// work a poll runs besides the driver's).
    queues: [Arc<std::sync::atomic::AtomicUsize>; 4],
}

impl Source for DriverTask {
    fn name(&self) -> &str {
        &self.name
    }

    /// The driver's poll takes its own lock (a second concurrent poll returns at once), and what
    /// follows (reads, active messages, backlogged gates) already runs from every driver's task
    /// at once.
    fn reentrant(&self) -> bool {
        true
    }

    fn probe(&self) -> bool {
        self.probe.driver.probe() || self.probe.queues.iter().any(|q| q.load(Acquire) != 0)
    }

    fn poll(&self, _: &mut PollCtx) -> Poll {
        let Some(core) = self.core.upgrade() else { return Poll::Done };
        let mut sink = CoreSink { core: &core, driver: self.driver };
        let n = core.drivers[self.driver].poll(&mut sink) + core.after_poll();
        if n > 0 { Poll::Progress } else { Poll::Idle }
    }

    fn blocking(&self) -> BlockingWait {
        match self.core.upgrade().and_then(|c| c.drivers[self.driver].wait_fd()) {
            Some(fd) => BlockingWait::Fd(fd),
            None => BlockingWait::None,
        }
    }

    fn arm(&self) -> bool {
        let Some(core) = self.core.upgrade() else { return true };
        // Always arm the driver (each arm is paired with a disarm); then: pending reads, busy
        // gates or queued active messages (another thread's runner may have missed the last one)
        // are work to do, not reasons to sleep.
        // A progression thread sleeps through plain eager data (`Link::try_send_lazy`) while no
        // application thread waits in the library: the application reads it at its next call,
        // or the next tick does; whatever someone waits for still wakes it (and a waiter that
        // comes to sleep pokes it to arm again, for everything).
        let d = &core.drivers[self.driver];
        let lazy = Pioman::in_progression_thread() && !core.pioman.application_waiting();
        let lazy = armed_for_urgent(self.driver, lazy);
        let quiet = if lazy { d.arm_for_urgent() } else { d.arm() };
        quiet
            && core.reads.is_empty()
            && core.writes.is_empty()
            && core.backlog.is_empty()
            && core.ams.jobs.is_empty()
    }

    fn disarm(&self) {
        if let Some(core) = self.core.upgrade() {
            let d = &core.drivers[self.driver];
            if disarmed_for_urgent(self.driver) { d.disarm_for_urgent() } else { d.disarm() }
        }
    }
}

/// A core of a job of one over the `self` driver (aggregating strategy, no eager limit, no
/// progression thread), granting `budget` bytes and `rdv_slots` rendezvous slots: what the core's
/// unit tests feed crafted packets to.
#[cfg(test)]
pub(crate) fn test_core(budget: u64, rdv_slots: u64) -> Arc<Core> {
    let b = crate::bootstrap::LocalJob::ranks(1).unwrap().pop().unwrap();
    let config = Config {
        drivers: Some(vec!["self".into()]),
        strategy: crate::strategies::by_name("aggreg").unwrap(),
        eager_limit: usize::MAX,
        unexpected_budget: budget,
        rdv_slots,
        rdv_writes: RdvWrites::default(),
        fallback: None,
        failover: Some(Default::default()),
    };
    let pio = pioman::Pioman::builder().without_marcel().threads(0).build().unwrap();
    Core::start(Arc::new(b), Some(pio), config).unwrap()
}
