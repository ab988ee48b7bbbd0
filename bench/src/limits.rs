//! The machine's physical limits, measured in the same run as what we compare with them: a
//! cache line bouncing between two cores (the floor of any shared-memory message), memcpy (the
//! floor of a copy-based large-message path), and a raw TCP ping-pong and stream over loopback
//! (the floor of the tcp driver).
//!
//! Each function times `iters` operations and returns the elapsed time (for criterion's
//! `iter_custom`).

use crate::pin_to;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

/// Two threads on two cores passing a counter through one cache line.
pub struct CacheLinePingPong {
    line: Arc<Line>,
    peer: Option<std::thread::JoinHandle<()>>,
}

#[repr(align(128))]
struct Line {
    v: AtomicU64,
    stop: AtomicBool,
}

impl CacheLinePingPong {
    /// The echoing thread runs on `cpu_b`; the caller should run on `cpu_a`.
    pub fn start(cpu_b: usize) -> CacheLinePingPong {
        let line = Arc::new(Line { v: AtomicU64::new(0), stop: AtomicBool::new(false) });
        let l = line.clone();
        let peer = std::thread::spawn(move || {
            pin_to(cpu_b);
            let mut want = 1;
            while !l.stop.load(Relaxed) {
                if l.v.load(Acquire) == want {
                    l.v.store(want + 1, Release);
                    want += 2;
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        CacheLinePingPong { line, peer: Some(peer) }
    }

    /// `iters` round trips.
    pub fn run(&self, iters: u64) -> Duration {
        let v = &self.line.v;
        let base = v.load(Acquire);
        let t = Instant::now();
        for i in 0..iters {
            let mine = base + 2 * i;
            v.store(mine + 1, Release);
            while v.load(Acquire) != mine + 2 {
                std::hint::spin_loop();
            }
        }
        t.elapsed()
    }
}

impl Drop for CacheLinePingPong {
    fn drop(&mut self) {
        self.line.stop.store(true, Relaxed);
        if let Some(h) = self.peer.take() {
            let _ = h.join();
        }
    }
}

/// `iters` copies of `src` into `dst`.
pub fn memcpy(src: &[u8], dst: &mut [u8], iters: u64) -> Duration {
    let t = Instant::now();
    for _ in 0..iters {
        dst.copy_from_slice(std::hint::black_box(src));
        std::hint::black_box(&mut *dst);
    }
    t.elapsed()
}

/// `iters` copies of `src` into `dst` by the kernel's cross-memory attach (`process_vm_readv`
/// on this process): the single-copy path of the shm driver, with its page-pinning cost, without
/// nmad around it.
pub fn cma_copy(src: &[u8], dst: &mut [u8], iters: u64) -> Duration {
    let pid = std::process::id() as libc::pid_t;
    let t = Instant::now();
    for _ in 0..iters {
        let local = libc::iovec { iov_base: dst.as_mut_ptr().cast(), iov_len: dst.len() };
        let remote = libc::iovec { iov_base: src.as_ptr().cast_mut().cast(), iov_len: src.len() };
        // SAFETY: both iovecs describe live buffers of this process of the given lengths; `dst`
        // is exclusively borrowed.
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        assert_eq!(n, src.len() as isize, "process_vm_readv: {}", std::io::Error::last_os_error());
    }
    t.elapsed()
}

/// Reads exactly `buf.len()` bytes from a nonblocking socket, spinning on `WouldBlock` (as a
/// polling runtime does: no sleep and wake-up in the measured path).
fn spin_read(s: &mut TcpStream, mut buf: &mut [u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match s.read(buf) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(k) => buf = &mut buf[k..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` to a nonblocking socket, spinning on `WouldBlock`.
fn spin_write(s: &mut TcpStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match s.write(buf) {
            Ok(k) => buf = &buf[k..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A loopback TCP connection with an echo (or sink) thread on `cpu_b`. Both ends poll their
/// nonblocking sockets, like the runtimes measured against this limit.
pub struct RawTcp {
    stream: TcpStream,
    peer: Option<std::thread::JoinHandle<()>>,
}

/// Commands to the peer thread: ping-pong `n` rounds of `size` bytes, or sink `n` bytes.
fn command(s: &mut TcpStream, kind: u8, size: u64, n: u64) {
    let mut c = [0u8; 17];
    c[0] = kind;
    c[1..9].copy_from_slice(&size.to_le_bytes());
    c[9..].copy_from_slice(&n.to_le_bytes());
    spin_write(s, &c).unwrap();
}

impl RawTcp {
    pub fn start(cpu_b: usize) -> std::io::Result<RawTcp> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        let addr = l.local_addr()?;
        let peer = std::thread::spawn(move || {
            pin_to(cpu_b);
            let (mut s, _) = l.accept().unwrap();
            s.set_nodelay(true).unwrap();
            s.set_nonblocking(true).unwrap();
            let mut buf = vec![0u8; 16 << 20];
            let mut c = [0u8; 17];
            while spin_read(&mut s, &mut c).is_ok() {
                let size = u64::from_le_bytes(c[1..9].try_into().unwrap()) as usize;
                let n = u64::from_le_bytes(c[9..].try_into().unwrap());
                match c[0] {
                    b'p' => {
                        for _ in 0..n {
                            spin_read(&mut s, &mut buf[..size]).unwrap();
                            spin_write(&mut s, &buf[..size]).unwrap();
                        }
                    }
                    b's' => {
                        let mut left = n;
                        while left > 0 {
                            let cap = (left as usize).min(buf.len());
                            match s.read(&mut buf[..cap]) {
                                Ok(0) => panic!("stream closed"),
                                Ok(k) => left -= k as u64,
                                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                    std::hint::spin_loop()
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                        spin_write(&mut s, b"k").unwrap();
                    }
                    _ => return,
                }
            }
        });
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        Ok(RawTcp { stream, peer: Some(peer) })
    }

    /// `iters` round trips of `size` bytes.
    pub fn pingpong(&mut self, size: usize, iters: u64) -> Duration {
        let mut buf = vec![1u8; size.max(1)];
        command(&mut self.stream, b'p', size as u64, iters);
        let t = Instant::now();
        for _ in 0..iters {
            spin_write(&mut self.stream, &buf[..size]).unwrap();
            spin_read(&mut self.stream, &mut buf[..size]).unwrap();
        }
        t.elapsed()
    }

    /// Streams `iters` writes of `size` bytes and waits for the peer to have read them all.
    pub fn stream(&mut self, data: &[u8], iters: u64) -> Duration {
        command(&mut self.stream, b's', 0, data.len() as u64 * iters);
        let t = Instant::now();
        for _ in 0..iters {
            spin_write(&mut self.stream, data).unwrap();
        }
        let mut k = [0u8; 1];
        spin_read(&mut self.stream, &mut k).unwrap();
        t.elapsed()
    }
}

impl Drop for RawTcp {
    fn drop(&mut self) {
        let _ = spin_write(&mut self.stream, &[b'q'; 17]);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if let Some(h) = self.peer.take() {
            let _ = h.join();
        }
    }
}
