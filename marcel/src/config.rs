//! Runtime configuration: what the builder says, else the environment, else defaults.
//!
//! Environment variables (a bad value is an error naming the variable, never silently ignored):
//! - `MARCEL_LWPS`: number of LWPs (default: one per core the process may use);
//! - `MARCEL_CPUSET`: OS CPUs to use, e.g. `0,2-3` (default: all allowed);
//! - `MARCEL_STACK_SIZE`: user-thread stack size, bytes with optional K/M/G (default 256K);
//! - `MARCEL_QUANTUM_US`: how long a user thread may run while others wait on its LWP before the
//!   LWP's queue is handed to a spare kernel thread (default 10000);
//! - `MARCEL_SPIN_US`: how long an idle LWP looks for work before sleeping (default 50);
//! - `MARCEL_PIN`: `0` to leave LWPs unpinned (default `1`);
//! - `MARCEL_SENTINEL`: `0` to disable the SCHED_IDLE blocking-call sentinels (default `1`; they
//!   need pinned LWPs, so `MARCEL_PIN=0` disables them too: blocking calls are then rescued by the
//!   monitor, within two quanta).

use std::io::{Error, ErrorKind};
use std::time::Duration;

pub(crate) const DEFAULT_STACK: usize = 256 << 10;
pub(crate) const DEFAULT_GUARD: usize = 64 << 10;

#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) lwps: Option<usize>,
    pub(crate) cpus: Option<Vec<usize>>,
    pub(crate) stack_size: usize,
    pub(crate) guard_size: usize,
    pub(crate) quantum: Duration,
    pub(crate) idle_spin: Duration,
    pub(crate) pin: bool,
    pub(crate) sentinel: bool,
    pub(crate) max_idle_spares: usize,
    pub(crate) thread_name: String,
}

/// Builder values, each `None` when the caller did not set it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Requested {
    pub(crate) lwps: Option<usize>,
    pub(crate) cpus: Option<Vec<usize>>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) quantum: Option<Duration>,
    pub(crate) idle_spin: Option<Duration>,
    pub(crate) pin: Option<bool>,
    pub(crate) sentinel: Option<bool>,
    pub(crate) max_idle_spares: Option<usize>,
    pub(crate) thread_name: Option<String>,
    pub(crate) ignore_env: bool,
}

impl Requested {
    pub(crate) fn resolve(&self) -> Result<Config, Error> {
        let env = |k: &str| if self.ignore_env { None } else { std::env::var(k).ok() };
        let lwps = match self.lwps {
            Some(n) => Some(n),
            None => env("MARCEL_LWPS").map(|v| parse_count("MARCEL_LWPS", &v)).transpose()?,
        };
        if lwps == Some(0) {
            return Err(invalid("the number of LWPs must be at least 1"));
        }
        let cpus = match &self.cpus {
            Some(c) => Some(c.clone()),
            None => env("MARCEL_CPUSET")
                .map(|v| {
                    crate::topology::parse_cpu_list(&v).map_err(|e| invalid(&format!("MARCEL_CPUSET: {e}")))
                })
                .transpose()?,
        };
        let stack_size = match self.stack_size {
            Some(s) => s,
            None => env("MARCEL_STACK_SIZE")
                .map(|v| parse_size("MARCEL_STACK_SIZE", &v))
                .transpose()?
                .unwrap_or(DEFAULT_STACK),
        };
        if stack_size < 16 << 10 {
            return Err(invalid(&format!("stack size {stack_size} is below the 16 KiB minimum")));
        }
        let micros =
            |k: &str| env(k).map(|v| parse_count(k, &v).map(|n| Duration::from_micros(n as u64))).transpose();
        let quantum = match self.quantum {
            Some(q) => q,
            None => micros("MARCEL_QUANTUM_US")?.unwrap_or(crate::sched::monitor::DEFAULT_QUANTUM),
        };
        if quantum < Duration::from_micros(100) {
            return Err(invalid("the quantum must be at least 100 µs"));
        }
        let idle_spin = match self.idle_spin {
            Some(s) => s,
            None => micros("MARCEL_SPIN_US")?.unwrap_or(Duration::from_micros(50)),
        };
        let flag = |k: &str, given: Option<bool>| -> Result<bool, Error> {
            match given {
                Some(b) => Ok(b),
                None => match env(k).as_deref() {
                    None | Some("1") | Some("yes") | Some("true") => Ok(true),
                    Some("0") | Some("no") | Some("false") => Ok(false),
                    Some(v) => Err(invalid(&format!("{k}={v:?}: expected 0 or 1"))),
                },
            }
        };
        Ok(Config {
            lwps,
            cpus,
            stack_size,
            guard_size: DEFAULT_GUARD,
            quantum,
            idle_spin,
            pin: flag("MARCEL_PIN", self.pin)?,
            // An unpinned sentinel would watch from another core and rescue calls that run fine.
            sentinel: flag("MARCEL_SENTINEL", self.sentinel)? && flag("MARCEL_PIN", self.pin)?,
            max_idle_spares: self.max_idle_spares.unwrap_or(8),
            thread_name: self.thread_name.clone().unwrap_or_else(|| "marcel".into()),
        })
    }
}

fn invalid(msg: &str) -> Error {
    Error::new(ErrorKind::InvalidInput, format!("marcel: {msg}"))
}

fn parse_count(var: &str, v: &str) -> Result<usize, Error> {
    v.trim().parse::<usize>().map_err(|_| invalid(&format!("{var}={v:?}: expected a non-negative integer")))
}

/// Parses `256K`, `1M`, `65536`, `2g` (powers of 1024).
pub(crate) fn parse_size(var: &str, v: &str) -> Result<usize, Error> {
    let t = v.trim();
    let (num, mul) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1usize << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| invalid(&format!("{var}={v:?}: expected a size such as 262144, 256K or 1M")))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("X", "256K").unwrap(), 256 << 10);
        assert_eq!(parse_size("X", " 1m ").unwrap(), 1 << 20);
        assert_eq!(parse_size("X", "4096").unwrap(), 4096);
        assert!(parse_size("X", "12Q").is_err());
        assert!(parse_size("X", "").is_err());
        assert!(parse_size("X", "99999999999999999999G").is_err());
    }

    #[test]
    fn builder_wins_and_bad_values_are_errors() {
        let r = Requested { lwps: Some(3), ignore_env: true, ..Default::default() };
        assert_eq!(r.resolve().unwrap().lwps, Some(3));
        let r = Requested { lwps: Some(0), ignore_env: true, ..Default::default() };
        assert!(r.resolve().is_err());
        let r = Requested { stack_size: Some(1024), ignore_env: true, ..Default::default() };
        let e = r.resolve().unwrap_err().to_string();
        assert!(e.contains("16 KiB"), "{e}");
    }
}
