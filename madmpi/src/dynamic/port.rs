//! Ports: names a process opens (`MPI_Open_port`) for others of its job to connect to.
//!
//! A port name is `madmpi-port:JOB:RANK:TOKEN`: the job's public fingerprint (16 hex
//! characters), the opening process's world rank, and a random 128-bit token (32 hex
//! characters) that names this port among the process's others. Port names come from the
//! program, the name service or a file: [`Port::parse`] checks every field and its length.
//! Owns the table of this process's open ports.

use crate::error::{Error, Result};
use std::sync::Mutex;

/// `MPI_MAX_PORT_NAME` (names fit with their NUL).
pub const PORT_NAME_MAX: usize = crate::abi::MPI_MAX_PORT_NAME as usize;
const PREFIX: &str = "madmpi-port";

/// A parsed port name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Port {
    pub job: String,
    pub rank: u32,
    pub token: [u8; 16],
}

/// The ports this process opened and has not closed.
static OPEN: Mutex<Vec<[u8; 16]>> = Mutex::new(Vec::new());

impl Port {
    pub(super) fn name(&self) -> String {
        let token: String = self.token.iter().map(|b| format!("{b:02x}")).collect();
        format!("{PREFIX}:{}:{}:{token}", self.job, self.rank)
    }

    /// Parses a port name (`MPI_ERR_PORT` if it is not one of ours).
    pub(super) fn parse(name: &str) -> Result<Port> {
        let bad = |why: &str| {
            let shown: String = name.chars().take(80).collect();
            Error::port(format!("{shown:?} is not a port name: {why}"))
        };
        if name.len() >= PORT_NAME_MAX {
            return Err(bad("too long"));
        }
        let fields: Vec<&str> = name.split(':').collect();
        let [prefix, job, rank, token] = fields[..] else { return Err(bad("expected 4 fields")) };
        if prefix != PREFIX {
            return Err(bad("wrong prefix"));
        }
        if job.len() != 16 || !job.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("the job is not 16 hex digits"));
        }
        let rank = rank.parse::<u32>().map_err(|_| bad("the rank is not a number"))?;
        if token.len() != 32 || !token.is_ascii() {
            return Err(bad("the token is not 32 hex digits"));
        }
        let mut t = [0u8; 16];
        for (i, b) in t.iter_mut().enumerate() {
            *b = u8::from_str_radix(&token[2 * i..2 * i + 2], 16).map_err(|_| bad("the token is not hex"))?;
        }
        Ok(Port { job: job.to_string(), rank, token: t })
    }

    /// The token's low 31 bits: the tags of this port's meeting (see `connect`).
    pub(super) fn tag(&self) -> u32 {
        u32::from_le_bytes(self.token[..4].try_into().expect("4 bytes")) & 0x7fff_ffff
    }
}

/// `MPI_Open_port`: a new port of this process (`c`: any communicator, for the process's job).
pub fn open_port(c: &crate::comm::Comm) -> Result<String> {
    let nm = c.runtime_nmad();
    open(&nm.job_id(), nm.rank())
}

/// A new port of world rank `rank` of job `job` (this process).
fn open(job: &str, rank: u32) -> Result<String> {
    let mut token = [0u8; 16];
    tools::secret::random_bytes(&mut token).map_err(|e| Error::other(format!("MPI_Open_port: {e}")))?;
    OPEN.lock().unwrap_or_else(|e| e.into_inner()).push(token);
    Ok(Port { job: job.to_string(), rank, token }.name())
}

/// `MPI_Close_port`: `MPI_ERR_PORT` unless this process opened `name` and has not closed it.
pub fn close_port(name: &str) -> Result<()> {
    let port = Port::parse(name)?;
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    let at = open.iter().position(|t| *t == port.token).ok_or_else(|| {
        Error::port("MPI_Close_port: this process has no such open port (closed already, or another's)")
    })?;
    open.swap_remove(at);
    Ok(())
}

/// Whether this process has `token` open.
pub(super) fn is_open(token: &[u8; 16]) -> bool {
    OPEN.lock().unwrap_or_else(|e| e.into_inner()).contains(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_round_trip_and_bad_ones_are_refused() {
        let p = Port { job: "0123456789abcdef".into(), rank: 7, token: [0xa5; 16] };
        assert_eq!(Port::parse(&p.name()).unwrap(), p);
        for bad in [
            "",
            "madmpi-port:0123456789abcdef:7",
            "other:0123456789abcdef:7:a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5",
            "madmpi-port:0123456789abcdeg:7:a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5",
            "madmpi-port:0123456789abcdef:-1:a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5",
            "madmpi-port:0123456789abcdef:7:a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5",
            "madmpi-port:0123456789abcdef:7:a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5zz",
            "madmpi-port:0123456789abcdef:7:a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5é",
            "madmpi-port:0123456789abcdef:7:a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5:x",
        ] {
            let e = Port::parse(bad).unwrap_err();
            assert_eq!(e.class(), crate::error::ErrorClass::Port, "{bad:?}");
        }
        assert!(Port::parse(&"x".repeat(PORT_NAME_MAX)).is_err());
    }

    #[test]
    fn ports_are_open_until_closed_once() {
        let a = open("0123456789abcdef", 0).unwrap();
        let b = open("0123456789abcdef", 0).unwrap();
        assert_ne!(a, b);
        assert!(is_open(&Port::parse(&a).unwrap().token));
        close_port(&a).unwrap();
        assert!(!is_open(&Port::parse(&a).unwrap().token));
        assert_eq!(close_port(&a).unwrap_err().class(), crate::error::ErrorClass::Port);
        close_port(&b).unwrap();
    }
}
