//! What the multi-process nmad tests share: a job of one process in a universe of several whose
//! key/value store is a directory the processes share (how separate test processes find each
//! other's business cards without a launcher), a data pattern to check messages with, and a raw
//! peer that speaks the wire protocol itself over the tcp driver (to send what nmad never would).

// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use nmad::bootstrap::{Bootstrap, Universe};
use nmad::{Config, Nmad};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tools::secret::JobKey;

/// A job of one process (`base` in a universe of `capacity`), whose key/value store is `dir`.
pub struct DirJob {
    pub dir: PathBuf,
    pub base: u32,
    pub capacity: u32,
    pub key: JobKey,
}

impl Bootstrap for DirJob {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn universe(&self) -> Universe {
        Universe { base: self.base, capacity: self.capacity }
    }
    fn job_key(&self) -> &JobKey {
        &self.key
    }
    fn put(&self, key: &str, value: &str) -> io::Result<()> {
        put(&self.dir, key, value)
    }
    fn fence(&self) -> io::Result<()> {
        Ok(()) // a job of one
    }
    fn get(&self, key: &str) -> io::Result<Option<String>> {
        match std::fs::read_to_string(self.dir.join(key)) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Stores `key` in `dir` atomically (a reader sees the whole value or nothing).
pub fn put(dir: &Path, key: &str, value: &str) -> io::Result<()> {
    let tmp = dir.join(format!("{key}.tmp{}", std::process::id()));
    std::fs::write(&tmp, value)?;
    std::fs::rename(tmp, dir.join(key))
}

/// Starts nmad as `job` with `config`, progressed by OS threads.
pub fn start(job: DirJob, config: Config) -> Nmad {
    let pio = pioman::Pioman::builder().without_marcel().build().unwrap();
    Nmad::builder().bootstrap(Arc::new(job)).pioman(pio).config(config).build().unwrap()
}

/// The bytes of message `seed`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seed as usize * 131 + i * 7 + (i >> 9)) as u8).collect()
}

/// A process that speaks nmad's wire protocol itself over the real tcp driver (to send what an
/// honest nmad never would): rank `rank` of a universe of `size`, connected to process 0.
pub struct RawPeer {
    pub link: Arc<dyn nmad::drivers::Link>,
    pub tcp: Arc<dyn nmad::drivers::Driver>,
}

impl RawPeer {
    /// Publishes a card as nmad would (granting `budget` bytes of credit), waits for process
    /// 0's card in `dir` and connects to it.
    pub fn connect(dir: &Path, key: JobKey, rank: u32, size: u32, budget: u64) -> RawPeer {
        use nmad::drivers::DriverEnv;
        let env = DriverEnv { rank, size, job_key: key, node: nmad::drivers::node_id(), single_node: false };
        let tcp = nmad::drivers::by_spec("tcp", &env).unwrap();
        let card = format!("credit/{budget}/16|node/{}|tcp/{}", env.node, tcp.card());
        put(dir, &format!("nmad-cards-{rank}"), &card).unwrap();
        let cards = loop {
            if let Ok(c) = std::fs::read_to_string(dir.join("nmad-cards-0")) {
                break c;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let card = cards.split('|').find_map(|e| e.strip_prefix("tcp/")).expect("process 0's tcp card");
        let link = tcp.connect(0, card).unwrap();
        RawPeer { link, tcp }
    }
}

/// A driver sink that ignores everything but the link's failure (only process 0 is connected).
#[derive(Default)]
pub struct Cut(pub Option<String>);

impl nmad::drivers::Sink for Cut {
    fn link_up(&mut self, _: Arc<dyn nmad::drivers::Link>) {}
    fn packet(&mut self, _: nmad::drivers::PeerId, _: &[u8]) {}
    fn bulk_dest(
        &mut self,
        _: nmad::drivers::PeerId,
        _: &nmad::drivers::BulkHeader,
        _: &mut Vec<nmad::drivers::SegmentMut>,
    ) -> bool {
        false
    }
    fn bulk_done(&mut self, _: nmad::drivers::PeerId, _: &nmad::drivers::BulkHeader) {}
    fn bulk_sent(&mut self, _: nmad::drivers::PeerId, _: u64) {}
    fn link_failed(&mut self, peer: nmad::drivers::PeerId, error: io::Error) {
        assert_eq!(peer, 0, "only process 0 is connected");
        self.0.get_or_insert(error.to_string());
    }
}

/// Records the errors logged in this process (install with `log::set_logger(&ERRORS)`).
pub struct Errors(std::sync::Mutex<Vec<String>>);

impl Errors {
    /// The errors logged so far.
    pub fn taken(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl log::Log for Errors {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Error
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            self.0.lock().unwrap().push(r.args().to_string());
        }
    }
    fn flush(&self) {}
}

pub static ERRORS: Errors = Errors(std::sync::Mutex::new(Vec::new()));

/// `n` ranks of one job in this process (threads as ranks, `LocalJob`), started at once (their
/// start is collective), over `drivers` (comma-separated) with `strategy`, the eager limit and
/// the credit given, progressed by OS threads.
pub fn ranks_in_process(
    n: u32,
    drivers: &str,
    strategy: &str,
    eager_limit: usize,
    budget: u64,
    rdv_slots: u64,
) -> Vec<Nmad> {
    ranks_in_process_writing(n, drivers, strategy, eager_limit, budget, rdv_slots, nmad::RdvWrites::default())
}

/// [`ranks_in_process`] with the given choice of who copies a rendezvous's data.
pub fn ranks_in_process_writing(
    n: u32,
    drivers: &str,
    strategy: &str,
    eager_limit: usize,
    budget: u64,
    rdv_slots: u64,
    rdv_writes: nmad::RdvWrites,
) -> Vec<Nmad> {
    let boots = nmad::bootstrap::LocalJob::ranks(n).unwrap();
    let handles: Vec<_> = boots
        .into_iter()
        .map(|b| {
            let (drivers, strategy) = (drivers.to_string(), strategy.to_string());
            std::thread::spawn(move || {
                let config = Config {
                    drivers: Some(drivers.split(',').map(String::from).collect()),
                    strategy: nmad::strategies::by_name(&strategy).unwrap(),
                    eager_limit,
                    unexpected_budget: budget,
                    rdv_slots,
                    rdv_writes,
                    fallback: None,
                    failover: Some(Default::default()),
                };
                let pio = pioman::Pioman::builder().without_marcel().build().unwrap();
                Nmad::builder().bootstrap(Arc::new(b)).pioman(pio).config(config).build().unwrap()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}
