//! NewMadeleine, the communication core.
//!
//! Layout (the tree shows the architecture):
//! - [`drivers`] move bytes: `self`, `shm`, `tcp` behind the [`drivers::Driver`] trait (seam 1);
//! - [`strategies`] decide what goes on the wire for each peer (seam 2);
//! - `core` owns gates (peers), sessions, tag matching, the eager and rendezvous protocols and
//!   flow control, and runs each driver from a pioman progression task;
//! - [`interfaces`] are what upper layers use (`sendrecv`, data descriptions);
//! - [`bootstrap`] finds the other processes (PMI) and exchanges business cards.
//! - [`reliable`] is the acknowledgement protocol (sequence numbers, selective ACKs, retransmission)
//!   for transports that lose packets (the udp driver), sans I/O;
//! - [`observe`] reports protocol events (unexpected arrivals, rendezvous, credit stalls) to a
//!   tool; `Nmad::stats` and `Nmad::driver_stats` give the counters.
//!
//! It must not know about MPI objects (communicators, datatypes): those belong to madmpi.
//!
//! ```no_run
//! use nmad::{Nmad, Source};
//! let nm = Nmad::init().unwrap(); // under madrun, Hydra or srun --mpi=pmi2; alone: 1 rank
//! let s = nm.session(0);
//! let peer = (nm.rank() + 1) % nm.size();
//! s.send(peer, 7, b"hello").unwrap();
//! let mut buf = [0u8; 5];
//! let st = s.recv(Source::Any, 7, &mut buf).unwrap();
//! assert_eq!(st.len, 5);
//! nm.finalize().unwrap();
//! ```

pub mod bootstrap;
mod core;
pub mod drivers;
pub mod interfaces;
mod leb128;
mod loom;
pub mod observe;
pub mod reliable;
mod small_copy;
pub mod spin;
pub mod strategies;

pub use crate::core::am::AmHandler;
pub use crate::core::request::{COMPLETED, Error, Event, MATCHED, Monitor, PEER_LOST, Request, Status};
pub use crate::core::session::SessionMonitor;
pub use crate::core::wire;
pub use crate::core::{Config, DriverStats, FailoverTimings, RailStatus, RdvWrites, Stats};
pub use interfaces::data::{Blocks, Data, Layout, Strided};
pub use interfaces::sendrecv::{Scope, SendMode, Source, TagMatch, scope};

use bootstrap::Bootstrap;
pub use bootstrap::Fence;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// One process's communication core. Cheap to clone; the last handle shuts it down.
#[derive(Clone)]
pub struct Nmad(Arc<Handle>);

struct Handle {
    core: Arc<crate::core::Core>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.core.shutdown();
    }
}

/// A session: an independent matching space (madmpi maps a communicator to one). Cheap to clone.
#[derive(Clone)]
pub struct Session(pub(crate) Arc<crate::core::session::SessionInner>);

/// Configures an [`Nmad`].
#[derive(Default)]
pub struct Builder {
    bootstrap: Option<Arc<dyn Bootstrap>>,
    pioman: Option<pioman::Pioman>,
    config: Option<Config>,
}

impl Builder {
    /// How to find the other processes (default: PMI from the environment).
    pub fn bootstrap(mut self, b: Arc<dyn Bootstrap>) -> Self {
        self.bootstrap = Some(b);
        self
    }

    /// The progression engine to use (default: a new one configured from the environment).
    pub fn pioman(mut self, p: pioman::Pioman) -> Self {
        self.pioman = Some(p);
        self
    }

    /// Settings (default: [`Config::from_env`]).
    pub fn config(mut self, c: Config) -> Self {
        self.config = Some(c);
        self
    }

    /// Starts the core. Collective: every process of the job calls it. Installs the workspace's
    /// logging backend if the program has none (`pm2_log::init`); under the launcher's PMI, its
    /// lines then show this process's rank in the job.
    pub fn build(self) -> io::Result<Nmad> {
        pm2_log::init();
        let config = match self.config {
            Some(c) => c,
            None => Config::from_env().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
        };
        let bootstrap = match self.bootstrap {
            Some(b) => b,
            None => {
                let pmi = bootstrap::PmiBootstrap::init()?;
                pm2_log::set_rank(pmi.rank());
                Arc::new(pmi)
            }
        };
        let core = crate::core::Core::start(bootstrap, self.pioman, config)?;
        let nm = Nmad(Arc::new(Handle { core }));
        log::info!(
            "rank {} of {}: drivers {}, strategy {}",
            nm.rank(),
            nm.size(),
            nm.driver_stats().iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(","),
            nm.strategy()
        );
        Ok(nm)
    }
}

impl Nmad {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Starts with the environment's settings, under the launcher's PMI (or as a singleton).
    pub fn init() -> io::Result<Nmad> {
        Builder::default().build()
    }

    /// This process's peer id: its rank in the job plus [`Nmad::base`].
    pub fn rank(&self) -> u32 {
        self.0.core.rank
    }

    /// The job's size.
    pub fn size(&self) -> u32 {
        self.0.core.size
    }

    /// The peer id of the job's rank 0 (0 unless madrun spawned this job).
    pub fn base(&self) -> u32 {
        self.0.core.base
    }

    /// Every peer id this process may reach is below this (the job's size, or madrun's universe).
    pub fn capacity(&self) -> u32 {
        self.0.core.bootstrap.universe().capacity
    }

    /// The session `id` (created on first use; the same id on every rank talks together).
    pub fn session(&self, id: u32) -> Session {
        Session(self.0.core.session(id))
    }

    /// Closes session `id`: its posted receives complete as cancelled, its unexpected messages
    /// are dropped.
    pub fn close_session(&self, id: u32) {
        self.0.core.close_session(id);
    }

    /// The progression engine (to wait on several requests, change the policy...).
    pub fn pioman(&self) -> &pioman::Pioman {
        &self.0.core.pioman
    }

    /// Names of the rails to `peer`, lowest latency first (creates the gate; connects nothing).
    pub fn rails_to(&self, peer: u32) -> Result<Vec<String>, Error> {
        self.0.core.rails_to(peer)
    }

    /// The rails to `peer` as they stand (lowest latency first): up or failed, fallback or not,
    /// and what their driver sent (to every peer). Creates the gate; connects nothing.
    pub fn rail_status(&self, peer: u32) -> Result<Vec<RailStatus>, Error> {
        self.0.core.rail_status(peer)
    }

    /// Rail transitions so far, over every gate: (rails failed, rails re-admitted). Each is
    /// also an [`observe::Event`] (`RailDown`, `RailUp`) and a log line.
    pub fn rail_transitions(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.0.core.rails_down.load(Relaxed), self.0.core.rails_up.load(Relaxed))
    }

    /// The node `peer` runs on, as an opaque id: equal ids mean the same machine (boot id and
    /// network namespace), whatever the drivers. Reads the peer's published card once.
    pub fn node_of(&self, peer: u32) -> Result<String, Error> {
        self.0.core.node_of(peer)
    }

    /// The peers whose link failed so far (dead, or unreachable), in rank order. A peer this
    /// process never tried to reach is not in it even if it died.
    pub fn failed_peers(&self) -> Vec<u32> {
        self.0.core.failed_peers()
    }

    /// How many peers were found failed so far (a cheap check before [`Nmad::failed_peers`]).
    pub fn peers_lost(&self) -> u64 {
        self.0.core.peers_lost.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn strategy(&self) -> &str {
        self.0.core.strategy.name()
    }

    /// Registers the handler of active messages `id` (see [`AmHandler`]). Every process that
    /// may receive AMs `id` registers it before its peers send them: an AM for an id not
    /// registered fails its sender as a protocol violation. A second registration of one id is
    /// an [`Error::InvalidArgument`].
    pub fn register_am(&self, id: u16, handler: std::sync::Arc<dyn AmHandler>) -> Result<(), Error> {
        self.0.core.ams.register(id, handler)
    }

    /// Sends active message `id` to `peer`: its handler there runs on `header` and `payload`.
    /// Owned buffers (`Vec<u8>`) are moved in; borrowed ones are copied (they may be reused when
    /// this returns). The AM waits for the peer's
    /// credit like eager data, and is aggregated with other traffic to the peer when the
    /// strategy aggregates. AMs to one peer run there in call order (they may overtake data
    /// sent before them). Errors: a header beyond [`wire::MAX_AM_HEADER`] or an AM beyond the
    /// eager limit (the caller splits large ones), or a failed peer.
    pub fn send_am(
        &self,
        peer: drivers::PeerId,
        id: u16,
        header: impl Into<Vec<u8>>,
        payload: impl Into<Vec<u8>>,
    ) -> Result<(), Error> {
        let core = &self.0.core;
        core.gate(peer)?.send_am(core, id, header.into(), payload.into())
    }

    /// The most bytes of header and payload together that one AM to `peer` may carry (the
    /// gate's eager limit): a caller splits larger transfers into AMs of at most this size.
    pub fn am_capacity(&self, peer: drivers::PeerId) -> Result<usize, Error> {
        Ok(self.0.core.gate(peer)?.eager_limit)
    }

    pub fn stats(&self) -> Stats {
        self.0.core.stats()
    }

    /// Traffic per driver started, in start order.
    pub fn driver_stats(&self) -> Vec<DriverStats> {
        self.0.core.driver_stats()
    }

    /// Progresses until what this process handed to its links has left it, or `limit` passes
    /// (as `finalize` does before its fence).
    pub fn drain_output(&self, limit: std::time::Duration) {
        self.0.core.drain_output(limit)
    }

    /// Collective end: waits until every rank got here, then closes links quietly.
    pub fn finalize(self) -> io::Result<()> {
        self.0.core.finalize()
    }

    /// The first half of [`Nmad::finalize`] for a caller that can recover from process
    /// failures: drains output and fences with the job unless the launcher reports that a
    /// process ended without finalizing; then end with [`Nmad::finalize_fenced`] after
    /// [`Fence::Done`], with [`Nmad::finalize_survivors`] (after synchronizing the survivors)
    /// after [`Fence::ProcessFailed`].
    pub fn finalize_fence(&self) -> io::Result<Fence> {
        self.0.core.finalize_fence()
    }

    /// Ends after [`Nmad::finalize_fence`] completed.
    pub fn finalize_fenced(self) -> io::Result<()> {
        self.0.core.finalize_fenced()
    }

    /// End after process failures, without the launcher's fence (which may wait for the dead
    /// forever): the caller has synchronized the surviving ranks itself (madmpi runs a
    /// fault-tolerant agreement among them).
    pub fn finalize_survivors(self) -> io::Result<()> {
        self.0.core.finalize_survivors()
    }

    /// A public name of this process's job (the job key's fingerprint): processes of one job
    /// share it, and only they can talk together.
    pub fn job_id(&self) -> String {
        self.0.core.bootstrap.job_key().fingerprint()
    }

    /// The launcher's name service (see [`Bootstrap::publish_name`]): publishes `port` under
    /// `service`.
    pub fn publish_name(&self, service: &str, port: &str) -> io::Result<()> {
        marcel::blocking(|| self.0.core.bootstrap.publish_name(service, port))
    }

    /// The port published under `service`.
    pub fn lookup_name(&self, service: &str) -> io::Result<String> {
        marcel::blocking(|| self.0.core.bootstrap.lookup_name(service))
    }

    /// Withdraws `service`.
    pub fn unpublish_name(&self, service: &str) -> io::Result<()> {
        marcel::blocking(|| self.0.core.bootstrap.unpublish_name(service))
    }

    /// Asks the launcher to start a new job (see [`Bootstrap::spawn`]): `Some(base)` when the
    /// new job's cards must be fetched ([`Nmad::await_card`] for its rank 0 at `base`).
    pub fn spawn(&self, req: &tools::pmi::spawn::SpawnRequest) -> io::Result<Option<u32>> {
        marcel::blocking(|| self.0.core.bootstrap.spawn(req))
    }

    /// Whether the processes this one may meet publish their cards where this one reads them
    /// (see [`Bootstrap::shares_cards`]); if not, the cards travel with [`Nmad::card_text`] and
    /// [`Nmad::learn_cards`].
    pub fn shares_cards(&self) -> bool {
        self.0.core.bootstrap.shares_cards()
    }

    /// The port of the parents that spawned this job, if they did.
    pub fn parent_port(&self) -> Option<String> {
        self.0.core.bootstrap.parent_port()
    }

    /// `peer`'s business cards as published (read once from the bootstrap).
    pub fn card_text(&self, peer: u32) -> Result<String, Error> {
        self.0.core.card_text(peer)
    }

    /// Learns `peer`'s business cards, which came from another job (untrusted: checked).
    pub fn learn_cards(&self, peer: u32, text: &str) -> Result<(), Error> {
        self.0.core.learn_cards(peer, text)
    }

    fn card_service(&self, peer: u32) -> String {
        format!("pm2-card-{}-{peer}", self.job_id())
    }

    /// Publishes this process's cards in the launcher's name service, for a process of another
    /// job that has no other way to read them ([`Nmad::await_card`]).
    pub fn publish_card(&self) -> io::Result<()> {
        let card = self.card_text(self.rank()).map_err(io::Error::other)?;
        self.publish_name(&self.card_service(self.rank()), &card)
    }

    /// Waits until `peer` published its cards ([`Nmad::publish_card`]), for at most `timeout`,
    /// then learns them and withdraws the name.
    pub fn await_card(&self, peer: u32, timeout: Duration) -> io::Result<()> {
        let service = self.card_service(peer);
        let started = std::time::Instant::now();
        let mut pause = Duration::from_millis(2);
        let card = loop {
            match self.lookup_name(&service) {
                Ok(card) => break card,
                Err(e) if e.kind() == io::ErrorKind::NotFound && started.elapsed() < timeout => {
                    marcel::blocking(|| std::thread::sleep(pause));
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("peer {peer} did not publish its cards within {} s", timeout.as_secs()),
                    ));
                }
                Err(e) => return Err(e),
            }
        };
        if let Err(e) = self.unpublish_name(&service) {
            log::warn!("withdrawing {service}: {e}");
        }
        self.learn_cards(peer, &card).map_err(io::Error::other)
    }

    /// Asks the launcher to end the whole job with exit status `code` (MPI_Abort). Returns only
    /// if it could not; the caller then exits by itself.
    pub fn abort(&self, code: i32, message: &str) -> io::Error {
        self.0.core.bootstrap.abort(code, message)
    }
}
