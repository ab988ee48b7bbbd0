//! The UDP limit the udp driver is measured against: a polling ping-pong over loopback, and a
//! stream of the largest datagrams with the least flow control that loses nothing there (the
//! receiver grants a credit per quarter of its socket buffer, at most 1 MiB; two
//! credits may be outstanding).

use crate::pin_to;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Bytes the receiver acknowledges at once, at most.
const CREDIT: usize = 1 << 20;
/// The largest datagram sent.
const DATAGRAM: usize = 65_000;

fn socket() -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind("127.0.0.1:0")?;
    let size: libc::c_int = 8 << 20;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
        // SAFETY: passes a pointer to a local c_int and its size; a refusal (not privileged)
        // leaves the default, and the credit below keeps the stream within it.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as _,
            )
        };
    }
    s.set_nonblocking(true)?;
    Ok(s)
}

/// The receive buffer the kernel granted `s` (it reports twice what it accounts for data).
fn rcvbuf(s: &UdpSocket) -> usize {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one c_int into `v`, whose size `len` gives.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 { 212_992 } else { v.max(0) as usize / 2 }
}

/// How long a spin waits for a datagram before the measurement gives up (a datagram lost:
/// this limit has no retransmission, so it runs only where nothing is lost).
const PATIENCE: Duration = Duration::from_secs(2);

/// Receives one datagram, spinning (a polling runtime's way: no sleep in the measured path).
fn spin_recv(s: &UdpSocket, buf: &mut [u8]) -> std::io::Result<usize> {
    let end = Instant::now() + PATIENCE;
    loop {
        match s.recv(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < end => {
                std::hint::spin_loop()
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "a datagram was lost"));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Sends one datagram, spinning while the socket buffer is full.
fn spin_send(s: &UdpSocket, buf: &[u8]) -> std::io::Result<()> {
    loop {
        match s.send(buf) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
}

/// Two connected loopback UDP sockets, the second served by a thread on `cpu_b`.
pub struct RawUdp {
    sock: UdpSocket,
    credit: usize,
    /// A datagram was lost: every later call fails at once.
    failed: bool,
    peer: Option<std::thread::JoinHandle<()>>,
    quit: Arc<AtomicBool>,
}

fn command(s: &UdpSocket, kind: u8, size: u64, n: u64) -> std::io::Result<()> {
    let mut c = [0u8; 17];
    c[0] = kind;
    c[1..9].copy_from_slice(&size.to_le_bytes());
    c[9..].copy_from_slice(&n.to_le_bytes());
    spin_send(s, &c)
}

/// The peer's side: answers commands until told to quit (by a command, or by `quit` when the
/// command was lost).
fn serve(b: &UdpSocket, credit: usize, quit: &AtomicBool) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let k = loop {
            match spin_recv(b, &mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut && !quit.load(Relaxed) => continue,
                r => break r?,
            }
        };
        if k != 17 {
            continue;
        }
        let size = u64::from_le_bytes(buf[1..9].try_into().unwrap()) as usize;
        let n = u64::from_le_bytes(buf[9..17].try_into().unwrap());
        match buf[0] {
            b'p' => {
                for _ in 0..n {
                    let k = spin_recv(b, &mut buf)?;
                    spin_send(b, &buf[..k.min(size.max(1))])?;
                }
            }
            b's' => {
                let (mut got, mut granted) = (0u64, 0u64);
                while got < n {
                    got += spin_recv(b, &mut buf)? as u64;
                    while got >= granted + credit as u64 {
                        granted += credit as u64;
                        spin_send(b, b"c")?;
                    }
                }
                spin_send(b, b"k")?;
            }
            _ => return Ok(()),
        }
    }
}

impl RawUdp {
    pub fn start(cpu_b: usize) -> std::io::Result<RawUdp> {
        let (a, b) = (socket()?, socket()?);
        let (aa, ba): (SocketAddr, SocketAddr) = (a.local_addr()?, b.local_addr()?);
        a.connect(ba)?;
        b.connect(aa)?;
        let credit = (rcvbuf(&b) / 4).clamp(DATAGRAM, CREDIT);
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let peer = std::thread::spawn(move || {
            pin_to(cpu_b);
            // Gives up (ends) at the first lost datagram or error: the caller's side reports it.
            let _ = serve(&b, credit, &q);
        });
        Ok(RawUdp { sock: a, credit, failed: false, peer: Some(peer), quit })
    }

    /// `iters` round trips of `size` bytes (at least 1: a datagram is never empty here); an
    /// error if a datagram is lost (a lossy network: no limit to measure).
    pub fn pingpong(&mut self, size: usize, iters: u64) -> std::io::Result<Duration> {
        let r = self.try_pingpong(size, iters);
        self.failed |= r.is_err();
        r
    }

    fn try_pingpong(&mut self, size: usize, iters: u64) -> std::io::Result<Duration> {
        self.check()?;
        let mut buf = vec![1u8; size.max(1)];
        command(&self.sock, b'p', size as u64, iters)?;
        let t = Instant::now();
        for _ in 0..iters {
            spin_send(&self.sock, &buf)?;
            spin_recv(&self.sock, &mut buf)?;
        }
        Ok(t.elapsed())
    }

    /// Streams `iters` messages of `data.len()` bytes as datagrams of at most 65,000 bytes,
    /// and waits for the peer to have received them all.
    pub fn stream(&mut self, data: &[u8], iters: u64) -> std::io::Result<Duration> {
        let r = self.try_stream(data, iters);
        self.failed |= r.is_err();
        r
    }

    fn check(&self) -> std::io::Result<()> {
        if self.failed { Err(std::io::Error::other("an earlier datagram was lost")) } else { Ok(()) }
    }

    fn try_stream(&mut self, data: &[u8], iters: u64) -> std::io::Result<Duration> {
        self.check()?;
        let total = data.len() as u64 * iters;
        command(&self.sock, b's', 0, total)?;
        let mut ack = [0u8; 8];
        let t = Instant::now();
        let (mut sent, mut credited) = (0u64, 0u64);
        for _ in 0..iters {
            for chunk in data.chunks(DATAGRAM) {
                while sent >= credited + 2 * self.credit as u64 {
                    if spin_recv(&self.sock, &mut ack)? == 1 && ack[0] == b'c' {
                        credited += self.credit as u64;
                    }
                }
                spin_send(&self.sock, chunk)?;
                sent += chunk.len() as u64;
            }
        }
        while !(spin_recv(&self.sock, &mut ack)? == 1 && ack[0] == b'k') {}
        Ok(t.elapsed())
    }
}

impl Drop for RawUdp {
    fn drop(&mut self) {
        // The command may be lost: the flag ends the peer's next idle wait.
        self.quit.store(true, Relaxed);
        let _ = command(&self.sock, b'q', 0, 0);
        if let Some(h) = self.peer.take() {
            let _ = h.join();
        }
    }
}
