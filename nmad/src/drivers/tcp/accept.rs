//! The acceptor: a background thread that accepts connections on the listening socket, so that
//! `connect` never needs the peer to poll. Each handshake runs on its own short-lived thread,
//! within one deadline for the whole exchange; at most [`MAX_HANDSHAKES`] at once, and when
//! they are all taken the oldest connection that has not proved the key is dropped to make room
//! (`tools::admission`), so idle strangers cannot lock ranks out.
//!
//! It owns the listening socket and its threads; authenticated connections go to the driver
//! through `Shared::adopt`.

use super::handshake::Setup;
use crate::drivers::ip::sys::EventFd;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tools::admission::Pool;

/// Handshakes in progress at once; a connection beyond evicts the oldest unauthenticated one.
const MAX_HANDSHAKES: usize = 64;

pub struct Acceptor {
    stop: Arc<EventFd>,
    thread: Option<JoinHandle<()>>,
}

impl Acceptor {
    /// Starts accepting on `listener` (nonblocking).
    pub fn spawn(listener: TcpListener, setup: Arc<Setup>) -> std::io::Result<Acceptor> {
        let stop = Arc::new(EventFd::new()?);
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("nmad-{}-accept", setup.rail))
            .spawn(move || run(listener, &s, setup))?;
        Ok(Acceptor { stop, thread: Some(thread) })
    }

    /// Stops accepting and closes the listening socket (new connections are refused).
    pub fn stop(&mut self) {
        self.stop.ring();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(listener: TcpListener, stop: &EventFd, setup: Arc<Setup>) {
    let pool = Pool::new(MAX_HANDSHAKES);
    loop {
        let mut fds = [
            libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: stop.fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: two valid pollfds.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if fds[1].revents != 0 {
            return;
        }
        if r <= 0 {
            continue; // EINTR
        }
        let (s, addr) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => {
                static ACCEPT_FAILED: pm2_log::RateLimited =
                    pm2_log::RateLimited::new(Duration::from_secs(5));
                ACCEPT_FAILED
                    .note(|n| log::warn!("{}: accept failed: {e}{}", setup.rail, pm2_log::repeats(n)));
                std::thread::sleep(Duration::from_millis(10)); // e.g. out of fds: do not spin
                continue;
            }
        };
        let ticket = match pool.admit(&s) {
            Ok((t, _evicted)) => t,
            Err(why) => {
                setup.reject(addr, why);
                continue;
            }
        };
        let setup2 = setup.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("nmad-{}-hs", setup.rail))
            .spawn(move || setup2.admit(s, addr, &ticket));
        if let Err(e) = spawned {
            setup.reject(addr, format!("no thread for its handshake: {e}"));
        }
    }
}
