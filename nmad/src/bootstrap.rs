//! How processes of a job find each other: ranks, the job secret, and a key/value store with a
//! fence, where each process publishes its drivers' business cards. Connections are then made
//! lazily, on first use, from the cards (no n² connections at start-up).
//!
//! [`PmiBootstrap`] speaks PMI to the launcher (madrun, Hydra, Slurm; or a 1-process singleton).
//! [`LocalJob`] runs several ranks inside one process (threads as ranks), for tests and tools.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Barrier, Mutex};
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
    /// (default; only madrun can).
    fn spawn(&self, req: &tools::pmi::spawn::SpawnRequest) -> io::Result<()> {
        let _ = req;
        Err(io::Error::new(io::ErrorKind::Unsupported, "this launcher cannot spawn processes (madrun can)"))
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
}

fn pmi_err(e: tools::pmi::PmiError) -> io::Error {
    io::Error::other(format!("PMI: {e}"))
}

impl PmiBootstrap {
    /// Connects to the launcher (collective: reads or creates the job key).
    pub fn init() -> io::Result<PmiBootstrap> {
        let mut pmi = Pmi::init().map_err(pmi_err)?;
        let key = tools::pmi::job_key(&mut pmi).map_err(pmi_err)?;
        let size = pmi.size();
        let universe = match std::env::var(UNIVERSE_VAR) {
            Ok(v) => Universe::parse(&v, size).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            Err(_) => Universe { base: 0, capacity: size },
        };
        Ok(PmiBootstrap { rank: pmi.rank(), size, pmi: Mutex::new(Some(pmi)), key, universe })
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
    fn publish_name(&self, service: &str, port: &str) -> io::Result<()> {
        self.with_io(|p| p.publish_name(service, port).map_err(|e| name_err(e, io::ErrorKind::AlreadyExists)))
    }
    fn lookup_name(&self, service: &str) -> io::Result<String> {
        self.with_io(|p| p.lookup_name(service).map_err(|e| name_err(e, io::ErrorKind::NotFound)))
    }
    fn unpublish_name(&self, service: &str) -> io::Result<()> {
        self.with_io(|p| p.unpublish_name(service).map_err(|e| name_err(e, io::ErrorKind::NotFound)))
    }
    fn spawn(&self, req: &tools::pmi::spawn::SpawnRequest) -> io::Result<()> {
        self.with_io(|p| {
            p.spawn(req).map_err(|e| match e {
                Some(e) => pmi_err(e),
                None => io::Error::new(
                    io::ErrorKind::Unsupported,
                    "this launcher cannot spawn processes (madrun can)",
                ),
            })
        })
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
}
