//! What the multi-process nmad tests share: a job of one process in a universe of several whose
//! key/value store is a directory the processes share (how separate test processes find each
//! other's business cards without a launcher), and a data pattern to check messages with.

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
