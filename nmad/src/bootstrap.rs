//! How processes of a job find each other: ranks, the job secret, and a key/value store with a
//! fence, where each process publishes its drivers' business cards. Connections are then made
//! lazily, on first use, from the cards (no n² connections at start-up).
//!
//! [`PmiBootstrap`] speaks PMI to the launcher (madrun, Hydra, Slurm; or a 1-process singleton).
//! [`LocalJob`] runs several ranks inside one process (threads as ranks), for tests and tools.
//!
//! Jobs that spawn (`MPI_Comm_spawn`) share peer ids ([`Universe`]) and the job key. Under madrun
//! they also share one key/value store. Under Hydra each job has its own store (a spawned job
//! reads what its parent preput in it, see [`PmiBootstrap::spawn`]), so ids are claimed in
//! Hydra's name service and the cards of the other job reach a process otherwise
//! ([`Bootstrap::shares_cards`]).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Barrier, Mutex};
pub use tools::pmi::Fence;
use tools::pmi::Pmi;
use tools::secret::JobKey;

/// Where a job's processes are among all the processes that may talk to it (the jobs one madrun
/// runs: the first, and those it spawns): a process's peer id is `base + rank`, every peer id is
/// below `capacity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Universe {
    pub base: u32,
    pub capacity: u32,
}

/// The environment variable madrun sets: `BASE/CAPACITY`.
pub const UNIVERSE_VAR: &str = "PM2_UNIVERSE";
/// Set to `1` by madrun when no rank of its job or of the jobs it spawns can run on another host.
pub const SINGLE_NODE_VAR: &str = "PM2_SINGLE_NODE";
/// Most peer ids a universe may have (the core keeps a slot per id).
pub const UNIVERSE_MAX: u32 = 1 << 16;
/// Peer ids a job started by Hydra keeps for the jobs it and they spawn (madrun keeps as many).
pub const SPAWN_ROOM: u32 = 1024;
/// The variable (or, under Hydra, the preput key) that tells a spawned job its parents' port.
pub const PARENT_PORT_VAR: &str = "PM2_PARENT_PORT";
/// The key under which madrun, or a parent under Hydra, preloads the job key.
const JOB_KEY_NAME: &str = "PM2_JOB_KEY";

/// The key/value store key of `peer`'s business cards (published by the core at start).
pub fn card_key(peer: u32) -> String {
    format!("nmad-cards-{peer}")
}

impl Universe {
    /// Parses [`UNIVERSE_VAR`]'s value for a job of `size` processes.
    pub fn parse(v: &str, size: u32) -> Result<Universe, String> {
        let bad =
            || format!("{UNIVERSE_VAR}={v:?}: expected BASE/CAPACITY holding the job's {size} processes");
        let (b, c) = v.trim().split_once('/').ok_or_else(bad)?;
        let (base, capacity) = (b.parse::<u32>().map_err(|_| bad())?, c.parse::<u32>().map_err(|_| bad())?);
        if base.checked_add(size).is_none_or(|end| end > capacity) || capacity > UNIVERSE_MAX {
            return Err(bad());
        }
        Ok(Universe { base, capacity })
    }
}

pub trait Bootstrap: Send + Sync {
    fn rank(&self) -> u32;
    fn size(&self) -> u32;
    /// Default: the job alone (peer ids are ranks).
    fn universe(&self) -> Universe {
        Universe { base: 0, capacity: self.size() }
    }
    fn job_key(&self) -> &JobKey;
    fn put(&self, key: &str, value: &str) -> io::Result<()>;
    /// Collective: everything put before is visible to every `get` after.
    fn fence(&self) -> io::Result<()>;
    fn get(&self, key: &str) -> io::Result<Option<String>>;
    /// A fence that gives up ([`Fence::ProcessFailed`]) when the launcher reports a process of
    /// the job ended without finalizing (see [`tools::pmi::notice`]). Default: [`Bootstrap::fence`].
    fn fence_unless_failed(&self) -> io::Result<Fence> {
        self.fence().map(|()| Fence::Done)
    }
    /// How many processes of the job run on this machine, if the launcher said. Default: unknown.
    fn local_size(&self) -> Option<u32> {
        None
    }
    /// Whether every process that may connect to this one runs on this node: the launcher placed
    /// the whole job here, and the universe is the job alone or madrun said so
    /// ([`SINGLE_NODE_VAR`]). Network drivers then listen on loopback only.
    fn single_node(&self) -> bool {
        let alone = self.universe().capacity == self.size()
            || std::env::var(SINGLE_NODE_VAR).is_ok_and(|v| v.trim() == "1");
        self.local_size() == Some(self.size()) && alone
    }
    /// Publishes `port` under `service` in the launcher's name service (`MPI_Publish_name`):
    /// `AlreadyExists` if the name is taken, `Unsupported` without a name service (default).
    fn publish_name(&self, service: &str, port: &str) -> io::Result<()> {
        let _ = (service, port);
        Err(no_name_service())
    }
    /// The port published under `service`: `NotFound` if none.
    fn lookup_name(&self, service: &str) -> io::Result<String> {
        let _ = service;
        Err(no_name_service())
    }
    /// Withdraws `service`: `NotFound` if it was not published.
    fn unpublish_name(&self, service: &str) -> io::Result<()> {
        let _ = service;
        Err(no_name_service())
    }
    /// Asks the launcher to start a new job (`MPI_Comm_spawn`): `Unsupported` when it cannot
    /// (default; madrun and Hydra can). `Some(base)`, the new job's first peer id, when its
    /// processes do not share this store (the caller then makes the cards meet, see
    /// [`Bootstrap::shares_cards`]); `None` when they do.
    fn spawn(&self, req: &tools::pmi::spawn::SpawnRequest) -> io::Result<Option<u32>> {
        let _ = req;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this launcher cannot spawn processes (madrun and Hydra can)",
        ))
    }
    /// Whether every process this one may meet (its job's, and those of the jobs spawned with
    /// it) publishes its cards in this store. Default: yes (one job).
    fn shares_cards(&self) -> bool {
        true
    }
    /// The port of the parents that spawned this job, if they did ([`PARENT_PORT_VAR`]).
    fn parent_port(&self) -> Option<String> {
        std::env::var(PARENT_PORT_VAR).ok()
    }
    /// The process is done with the job (after the last fence). Default: nothing to do.
    fn finalize(&self) -> io::Result<()> {
        Ok(())
    }
    /// Asks the launcher to end the whole job with exit status `code`. Returns only if it could
    /// not (the caller then exits by itself). Default: cannot.
    fn abort(&self, code: i32, message: &str) -> io::Error {
        let _ = (code, message);
        io::Error::new(io::ErrorKind::Unsupported, "this bootstrap cannot end the job")
    }
}

fn no_name_service() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "this bootstrap has no name service")
}

/// A name service's answer as an `io::Error`: a refusal is `refused` (the name is taken, or
/// unknown), a missing service `Unsupported`.
fn name_err(e: tools::pmi::names::NameError, refused: io::ErrorKind) -> io::Error {
    use tools::pmi::names::NameError;
    match e {
        NameError::Refused(why) => io::Error::new(refused, why),
        NameError::Unsupported => io::Error::new(io::ErrorKind::Unsupported, e.to_string()),
        NameError::Pmi(e) => pmi_err(e),
    }
}

/// The launcher's PMI.
pub struct PmiBootstrap {
    /// `None` once finalized.
    pmi: Mutex<Option<Pmi>>,
    rank: u32,
    size: u32,
    key: JobKey,
    universe: Universe,
    /// A PMI-1 launcher other than madrun (Hydra): a store per job, spawn in Hydra's form.
    hydra: bool,
    /// Every job of the universe runs on this node (madrun's or the parents' word, or this job
    /// was started by Hydra: the jobs it spawns run on its hosts).
    single_node_universe: bool,
    parent_port: Option<String>,
    /// Under Hydra, where this process starts looking for free peer ids ([`PmiBootstrap::spawn`]).
    next_id: Mutex<u32>,
}

fn pmi_err(e: tools::pmi::PmiError) -> io::Error {
    io::Error::other(format!("PMI: {e}"))
}

impl PmiBootstrap {
    /// Connects to the launcher (collective: reads or creates the job key).
    ///
    /// madrun tells a process its universe and its parents' port in its environment. Under
    /// Hydra, a job that Hydra started keeps [`SPAWN_ROOM`] ids after its own for the jobs it
    /// spawns, and a job spawned by one of ours (`PMI_SPAWNED`) reads them from the preput keys.
    pub fn init() -> io::Result<PmiBootstrap> {
        let mut pmi = Pmi::init().map_err(pmi_err)?;
        let key = tools::pmi::job_key(&mut pmi).map_err(pmi_err)?;
        let size = pmi.size();
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let madrun = std::env::var_os(UNIVERSE_VAR).is_some();
        let hydra = !madrun && pmi.kind() == tools::pmi::Kind::Pmi1;
        let spawned = hydra && std::env::var("PMI_SPAWNED").is_ok_and(|v| v.trim() == "1");
        let mut preput = |k: &str| if spawned { pmi.get(k).map_err(pmi_err) } else { Ok(None) };
        let universe_text = match std::env::var(UNIVERSE_VAR) {
            Ok(v) => Some(v),
            Err(_) => preput(UNIVERSE_VAR)?,
        };
        let universe = match universe_text {
            Some(v) => Universe::parse(&v, size).map_err(invalid)?,
            None if hydra => {
                Universe { base: 0, capacity: size.saturating_add(SPAWN_ROOM).min(UNIVERSE_MAX).max(size) }
            }
            None => Universe { base: 0, capacity: size },
        };
        let parents_port = if spawned { preput(PARENT_PORT_VAR)? } else { None };
        let single_node_universe = std::env::var(SINGLE_NODE_VAR).is_ok_and(|v| v.trim() == "1")
            || (hydra && !spawned)
            || preput(SINGLE_NODE_VAR)?.is_some_and(|v| v.trim() == "1");
        let parent_port = std::env::var(PARENT_PORT_VAR).ok().or(parents_port);
        Ok(PmiBootstrap {
            rank: pmi.rank(),
            size,
            pmi: Mutex::new(Some(pmi)),
            key,
            universe,
            hydra,
            single_node_universe,
            parent_port,
            next_id: Mutex::new(universe.base + size),
        })
    }

    /// Claims `n` peer ids no other job of the universe has, under Hydra: each claim is a name
    /// `pm2-ids-JOB-FIRST` → `n` in Hydra's name service (one for all the jobs of an
    /// `mpiexec`), published only if nobody took it first. Claims follow each other from the
    /// end of the first job, so a process walks them from the last end it knows; children that
    /// spawn in turn claim from the same chain, so every job of the universe gets ids of its
    /// own, up to the universe's capacity.
    fn claim_ids(&self, n: u32) -> io::Result<u32> {
        let fp = self.key.fingerprint();
        let mut next = self.next_id.lock().unwrap();
        let full = |at: u32| {
            io::Error::other(format!(
                "{n} more processes do not fit: {at} of {} peer ids are taken",
                self.universe.capacity
            ))
        };
        loop {
            let end =
                next.checked_add(n).filter(|&e| e <= self.universe.capacity).ok_or_else(|| full(*next))?;
            let name = format!("pm2-ids-{fp}-{next}");
            match self.publish_name(&name, &n.to_string()) {
                Ok(()) => {
                    let base = *next;
                    *next = end;
                    return Ok(base);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let v = self.lookup_name(&name)?;
                    let taken = v
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|t| (1..=tools::pmi::spawn::SPAWN_PROCS_MAX).contains(t))
                        .ok_or_else(|| io::Error::other(format!("the name service holds {name}={v:?}")))?;
                    *next = next.checked_add(taken).ok_or_else(|| full(*next))?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Pmi) -> Result<T, tools::pmi::PmiError>) -> io::Result<T> {
        self.with_io(|p| f(p).map_err(pmi_err))
    }

    fn with_io<T>(&self, f: impl FnOnce(&mut Pmi) -> io::Result<T>) -> io::Result<T> {
        match self.pmi.lock().unwrap().as_mut() {
            Some(p) => f(p),
            None => Err(io::Error::new(io::ErrorKind::NotConnected, "PMI already finalized")),
        }
    }
}

impl Bootstrap for PmiBootstrap {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn universe(&self) -> Universe {
        self.universe
    }
    fn job_key(&self) -> &JobKey {
        &self.key
    }
    fn put(&self, key: &str, value: &str) -> io::Result<()> {
        self.with(|p| p.put(key, value))
    }
    fn local_size(&self) -> Option<u32> {
        self.with(|p| Ok(p.local().map(|(_, n)| n))).ok().flatten()
    }
    fn fence(&self) -> io::Result<()> {
        self.with(|p| p.fence())
    }
    fn get(&self, key: &str) -> io::Result<Option<String>> {
        self.with(|p| p.get(key))
    }
    fn fence_unless_failed(&self) -> io::Result<Fence> {
        self.with(|p| p.fence_unless_failed())
    }
    fn publish_name(&self, service: &str, port: &str) -> io::Result<()> {
        self.with_io(|p| p.publish_name(service, port).map_err(|e| name_err(e, io::ErrorKind::AlreadyExists)))
    }
    fn lookup_name(&self, service: &str) -> io::Result<String> {
        self.with_io(|p| p.lookup_name(service).map_err(|e| name_err(e, io::ErrorKind::NotFound)))
    }
    fn unpublish_name(&self, service: &str) -> io::Result<()> {
        self.with_io(|p| p.unpublish_name(service).map_err(|e| name_err(e, io::ErrorKind::NotFound)))
    }
    /// Under madrun, its one-line request. Under Hydra: claims the children's ids, and preputs
    /// what they read at start (the job key, their universe, the parents' port, whether the
    /// universe is on this node) and this process's card, so that they reach it.
    fn spawn(&self, req: &tools::pmi::spawn::SpawnRequest) -> io::Result<Option<u32>> {
        let unsupported = |e: Option<tools::pmi::PmiError>| match e {
            Some(e) => pmi_err(e),
            None => io::Error::new(
                io::ErrorKind::Unsupported,
                "this launcher cannot spawn processes (madrun and Hydra can)",
            ),
        };
        if !self.hydra {
            return self.with_io(|p| p.spawn(req).map_err(unsupported)).map(|()| None);
        }
        let n = req.nprocs();
        if n == 0 || n > tools::pmi::spawn::SPAWN_PROCS_MAX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{n} processes: 1 to {} in one spawn", tools::pmi::spawn::SPAWN_PROCS_MAX),
            ));
        }
        // Before ids are claimed for nothing (spawn_hydra checks again).
        tools::pmi::hydra_spawn::check_programs(req)
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e.to_string()))?;
        let me = self.universe.base + self.rank;
        let card =
            self.get(&card_key(me))?.ok_or_else(|| io::Error::other("this process published no card"))?;
        let base = self.claim_ids(n)?;
        let mut preput = vec![
            (JOB_KEY_NAME.to_string(), self.key.to_hex()),
            (UNIVERSE_VAR.to_string(), format!("{base}/{}", self.universe.capacity)),
            (PARENT_PORT_VAR.to_string(), req.parent_port.clone()),
            (card_key(me), card),
        ];
        if self.single_node() {
            preput.push((SINGLE_NODE_VAR.to_string(), "1".to_string()));
        }
        self.with_io(|p| p.spawn_hydra(req, &preput).map_err(unsupported))?;
        Ok(Some(base))
    }
    fn shares_cards(&self) -> bool {
        !self.hydra
    }
    fn parent_port(&self) -> Option<String> {
        self.parent_port.clone()
    }
    fn single_node(&self) -> bool {
        let alone = self.universe.capacity == self.size || self.single_node_universe;
        self.local_size() == Some(self.size) && alone
    }
    fn finalize(&self) -> io::Result<()> {
        match self.pmi.lock().unwrap().take() {
            Some(p) => p.finalize().map_err(pmi_err),
            None => Ok(()),
        }
    }
    fn abort(&self, code: i32, message: &str) -> io::Error {
        match self.with(|p| Err::<(), _>(p.abort(code, message))) {
            Err(e) => e,
            Ok(()) => unreachable!("abort returns only its failure"),
        }
    }
}

/// A job whose ranks are in this process.
pub struct LocalJob {
    kv: Mutex<HashMap<String, String>>,
    /// The name service of its ranks.
    names: Mutex<HashMap<String, String>>,
    barrier: Barrier,
    size: u32,
    key: JobKey,
}

impl LocalJob {
    /// The bootstraps of ranks `0..size`.
    pub fn ranks(size: u32) -> io::Result<Vec<LocalBootstrap>> {
        let job = Arc::new(LocalJob {
            kv: Mutex::new(HashMap::new()),
            names: Mutex::new(HashMap::new()),
            barrier: Barrier::new(size as usize),
            size,
            key: JobKey::generate()?,
        });
        Ok((0..size).map(|rank| LocalBootstrap { job: job.clone(), rank }).collect())
    }
}

pub struct LocalBootstrap {
    job: Arc<LocalJob>,
    rank: u32,
}

impl Bootstrap for LocalBootstrap {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.job.size
    }
    fn job_key(&self) -> &JobKey {
        &self.job.key
    }
    fn put(&self, key: &str, value: &str) -> io::Result<()> {
        self.job.kv.lock().unwrap().insert(key.to_string(), value.to_string());
        Ok(())
    }
    fn fence(&self) -> io::Result<()> {
        self.job.barrier.wait();
        Ok(())
    }
    fn get(&self, key: &str) -> io::Result<Option<String>> {
        Ok(self.job.kv.lock().unwrap().get(key).cloned())
    }
    fn publish_name(&self, service: &str, port: &str) -> io::Result<()> {
        let mut names = self.job.names.lock().unwrap();
        if names.contains_key(service) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{service:?} is published")));
        }
        names.insert(service.to_string(), port.to_string());
        Ok(())
    }
    fn lookup_name(&self, service: &str) -> io::Result<String> {
        let names = self.job.names.lock().unwrap();
        names.get(service).cloned().ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not published"))
    }
    fn unpublish_name(&self, service: &str) -> io::Result<()> {
        let mut names = self.job.names.lock().unwrap();
        names
            .remove(service)
            .map(drop)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not published"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universes_must_hold_the_job() {
        assert_eq!(Universe::parse("4/64", 2), Ok(Universe { base: 4, capacity: 64 }));
        assert_eq!(Universe::parse("0/2", 2), Ok(Universe { base: 0, capacity: 2 }));
        for bad in ["1/2", "x/4", "4", "4294967295/5", "0/4294967295", ""] {
            assert!(Universe::parse(bad, 2).is_err(), "{bad:?}");
        }
    }

    /// A job of 2 started by Hydra, with a singleton's in-process name service standing for
    /// Hydra's.
    fn hydra_job(capacity: u32) -> PmiBootstrap {
        PmiBootstrap {
            pmi: Mutex::new(Some(Pmi::singleton())),
            rank: 0,
            size: 2,
            key: JobKey::generate().unwrap(),
            universe: Universe { base: 0, capacity },
            hydra: true,
            single_node_universe: true,
            parent_port: None,
            next_id: Mutex::new(2),
        }
    }

    #[test]
    fn claimed_ids_skip_the_claims_of_others_and_stay_below_the_capacity() {
        let b = hydra_job(16);
        let fp = b.key.fingerprint();
        // Another process claimed 2..5 first.
        b.publish_name(&format!("pm2-ids-{fp}-2"), "3").unwrap();
        assert_eq!(b.claim_ids(2).unwrap(), 5);
        assert_eq!(b.claim_ids(1).unwrap(), 7);
        assert_eq!(b.lookup_name(&format!("pm2-ids-{fp}-7")).unwrap(), "1");
        assert!(b.claim_ids(9).is_err(), "8 + 9 > 16");
        assert_eq!(b.claim_ids(8).unwrap(), 8);
        // A claim that is not a count is refused, not skipped blindly.
        let c = hydra_job(64);
        c.publish_name(&format!("pm2-ids-{}-2", c.key.fingerprint()), "lots").unwrap();
        assert!(c.claim_ids(1).is_err());
    }
}
