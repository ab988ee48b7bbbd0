//! The job secret: a random key per job, and the handshake that proves it on every connection
//! between processes of the job (madrun's PMI port now; nmad's TCP and shared-memory attach next).
//!
//! Mutual challenge-response with HMAC-SHA256, fixed-size messages (the key never crosses the wire,
//! nonces from both sides defeat replay):
//! 1. client → server: `PM2JOB01` + client nonce (16 bytes)
//! 2. server → client: `PM2JOB01` + server nonce (16) + HMAC(key, "server" ‖ nc ‖ ns)
//! 3. client → server: HMAC(key, "client" ‖ nc ‖ ns)
//! 4. server → client: `OK`
//!
//! A stranger fails at 1 (wrong magic) or 3 (wrong MAC); a fake server fails at 2. Callers set
//! socket timeouts so that a silent peer cannot hold them.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;
use std::io::{self, Read, Write};

const MAGIC: &[u8; 8] = b"PM2JOB01";
const NONCE: usize = 16;
const MAC: usize = 32;

/// A job's secret key (32 random bytes). Its `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct JobKey([u8; 32]);

impl fmt::Debug for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobKey(<secret>)")
    }
}

/// Fills `buf` from the kernel's CSPRNG.
pub fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: writes at most `buf.len() - done` bytes into our buffer.
        let n = unsafe { libc::getrandom(buf[done..].as_mut_ptr().cast(), buf.len() - done, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
}

impl JobKey {
    pub fn generate() -> io::Result<JobKey> {
        let mut k = [0u8; 32];
        random_bytes(&mut k)?;
        Ok(JobKey(k))
    }

    /// The key as 64 hex characters (what travels through PMI).
    pub fn to_hex(&self) -> String {
        crate::pmi::wire::encode_value(&self.0)
    }

    pub fn from_hex(s: &str) -> Result<JobKey, String> {
        let b = crate::pmi::wire::decode_value(s.trim()).map_err(|e| format!("job key: {e}"))?;
        let k: [u8; 32] = b.try_into().map_err(|_| "job key: expected 64 hex characters".to_string())?;
        Ok(JobKey(k))
    }

    /// A public name of the job (16 hex characters): equal for the processes that share this
    /// key, and telling nothing about the key (an HMAC of a fixed label).
    pub fn fingerprint(&self) -> String {
        let mac = self.mac(b"job-fingerprint", &[], &[]).finalize().into_bytes();
        crate::pmi::wire::encode_value(&mac[..8])
    }

    /// HMAC-SHA256 under the key of `label` then `data`: a proof for handshakes other than the
    /// stream one below (the udp driver's datagrams). Labels keep proofs of different steps
    /// apart.
    pub fn proof(&self, label: &[u8], data: &[u8]) -> [u8; 32] {
        self.mac(label, data, &[]).finalize().into_bytes().into()
    }

    /// Whether `mac` is [`JobKey::proof`] of `label` and `data` (compared in constant time).
    pub fn verify(&self, label: &[u8], data: &[u8], mac: &[u8]) -> bool {
        self.mac(label, data, &[]).verify_slice(mac).is_ok()
    }

    fn mac(&self, role: &[u8], nc: &[u8], ns: &[u8]) -> Hmac<Sha256> {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes any key length");
        m.update(role);
        m.update(nc);
        m.update(ns);
        m
    }
}

/// Why a handshake failed.
#[derive(Debug)]
pub enum HandshakeError {
    Io(io::Error),
    /// The peer does not speak this protocol (its first bytes are quoted, hex).
    NotAJobPeer(String),
    /// The peer does not know the job's key.
    WrongKey,
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Io(e) => write!(f, "handshake I/O error: {e}"),
            HandshakeError::NotAJobPeer(b) => write!(f, "peer does not speak the job handshake (sent {b})"),
            HandshakeError::WrongKey => write!(f, "peer does not know the job key"),
        }
    }
}

impl std::error::Error for HandshakeError {}

impl From<io::Error> for HandshakeError {
    fn from(e: io::Error) -> Self {
        HandshakeError::Io(e)
    }
}

/// The connecting side.
pub fn client_handshake<S: Read + Write>(s: &mut S, key: &JobKey) -> Result<(), HandshakeError> {
    let mut nc = [0u8; NONCE];
    random_bytes(&mut nc)?;
    let mut hello = Vec::with_capacity(8 + NONCE);
    hello.extend_from_slice(MAGIC);
    hello.extend_from_slice(&nc);
    s.write_all(&hello)?;
    let mut reply = [0u8; 8 + NONCE + MAC];
    s.read_exact(&mut reply)?;
    if &reply[..8] != MAGIC {
        return Err(HandshakeError::NotAJobPeer(crate::pmi::wire::encode_value(&reply[..8])));
    }
    let ns = &reply[8..8 + NONCE];
    key.mac(b"server", &nc, ns).verify_slice(&reply[8 + NONCE..]).map_err(|_| HandshakeError::WrongKey)?;
    s.write_all(&key.mac(b"client", &nc, ns).finalize().into_bytes())?;
    let mut ok = [0u8; 2];
    s.read_exact(&mut ok)?;
    if &ok != b"OK" {
        return Err(HandshakeError::WrongKey);
    }
    Ok(())
}

/// The accepting side.
pub fn server_handshake<S: Read + Write>(s: &mut S, key: &JobKey) -> Result<(), HandshakeError> {
    let mut hello = [0u8; 8 + NONCE];
    s.read_exact(&mut hello)?;
    if &hello[..8] != MAGIC {
        return Err(HandshakeError::NotAJobPeer(crate::pmi::wire::encode_value(&hello[..8])));
    }
    let nc = &hello[8..];
    let mut ns = [0u8; NONCE];
    random_bytes(&mut ns)?;
    let mut reply = Vec::with_capacity(8 + NONCE + MAC);
    reply.extend_from_slice(MAGIC);
    reply.extend_from_slice(&ns);
    reply.extend_from_slice(&key.mac(b"server", nc, &ns).finalize().into_bytes());
    s.write_all(&reply)?;
    let mut proof = [0u8; MAC];
    s.read_exact(&mut proof)?;
    key.mac(b"client", nc, &ns).verify_slice(&proof).map_err(|_| HandshakeError::WrongKey)?;
    s.write_all(b"OK")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    fn pair() -> (UnixStream, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        for s in [&a, &b] {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        }
        (a, b)
    }

    #[test]
    fn same_key_succeeds_both_ways() {
        let key = JobKey::generate().unwrap();
        let (mut a, mut b) = pair();
        let k2 = key.clone();
        let server = std::thread::spawn(move || server_handshake(&mut b, &k2));
        client_handshake(&mut a, &key).unwrap();
        server.join().unwrap().unwrap();
    }

    #[test]
    fn wrong_key_is_rejected_on_both_sides() {
        let (mut a, mut b) = pair();
        let server = std::thread::spawn(move || server_handshake(&mut b, &JobKey::generate().unwrap()));
        let c = client_handshake(&mut a, &JobKey::generate().unwrap());
        assert!(matches!(c, Err(HandshakeError::WrongKey)), "a fake server is detected: {c:?}");
        drop(a);
        let s = server.join().unwrap();
        assert!(s.is_err(), "{s:?}");
    }

    #[test]
    fn a_stranger_is_rejected_without_hanging() {
        let key = JobKey::generate().unwrap();
        let (mut a, mut b) = pair();
        let server = std::thread::spawn(move || server_handshake(&mut b, &key));
        a.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        match server.join().unwrap() {
            Err(HandshakeError::NotAJobPeer(s)) => assert!(s.starts_with("474554")),
            other => panic!("{other:?}"),
        }
        // A silent stranger: the server's read times out.
        let (_silent, mut b) = pair();
        b.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        assert!(matches!(server_handshake(&mut b, &JobKey::generate().unwrap()), Err(HandshakeError::Io(_))));
    }

    #[test]
    fn key_hex_round_trip_and_debug_hides_it() {
        let k = JobKey::generate().unwrap();
        assert_eq!(JobKey::from_hex(&k.to_hex()).unwrap(), k);
        assert_eq!(format!("{k:?}"), "JobKey(<secret>)");
        assert!(JobKey::from_hex("abcd").is_err());
    }

    #[test]
    fn fingerprints_name_the_key_without_revealing_it() {
        let (a, b) = (JobKey::generate().unwrap(), JobKey::generate().unwrap());
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint().len(), 16);
        assert!(!a.to_hex().contains(&a.fingerprint()));
    }
}
