//! The driver's background thread: accepts connections on the listening socket (each set up in a
//! short-lived thread of its own within one deadline, at most 64 at once, the oldest
//! unauthenticated one dropped to make room: idle strangers lock nobody out) and watches every
//! link's control socket, failing the link when the peer closes it (exit, crash, shutdown).
//!
//! It runs whether or not anyone polls, so a peer can connect while this process computes. It
//! owns the listener; it reports through [`Shared`] and never calls the sink.

use super::link::ShmLink;
use super::setup;
use super::shared::Shared;
use super::socket::{closed_reason, drain, peer_cred};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::Ordering::*;
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Starts the thread.
pub(crate) fn spawn(shared: Arc<Shared>, listener: UnixListener) -> io::Result<JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    std::thread::Builder::new().name("nmad-shm".into()).spawn(move || run(&shared, &listener))
}

fn pollfd(fd: &impl AsRawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd { fd: fd.as_raw_fd(), events, revents: 0 }
}

fn run(sh: &Arc<Shared>, listener: &UnixListener) {
    let mut watched: Vec<Arc<ShmLink>> = Vec::new();
    let mut generation = u64::MAX;
    let mut fds = Vec::new();
    while !sh.closed.load(Acquire) {
        let g = sh.generation.load(Acquire);
        if g != generation {
            generation = g;
            let links = sh.links.lock().unwrap_or_else(PoisonError::into_inner);
            watched = links.iter().filter(|l| !l.failed()).cloned().collect();
        }
        fds.clear();
        fds.push(pollfd(&sh.ctl, libc::POLLIN));
        fds.push(pollfd(listener, libc::POLLIN));
        fds.extend(watched.iter().map(|l| pollfd(&l.sock, libc::POLLIN | libc::POLLRDHUP)));
        // SAFETY: `fds` is a valid array of pollfds for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                static POLL_FAILED: pm2_log::RateLimited = pm2_log::RateLimited::new(Duration::from_secs(5));
                POLL_FAILED
                    .note(|n| log::warn!("shm: rank {}: poll: {e}{}", sh.local.rank, pm2_log::repeats(n)));
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        if fds[0].revents != 0 {
            drain(&sh.ctl);
        }
        if fds[1].revents != 0 {
            accept_all(sh, listener);
        }
        let mut lost = false;
        for (l, p) in watched.iter().zip(&fds[2..]) {
            if p.revents == 0 {
                continue;
            }
            if let Some(why) = closed_reason(&l.sock) {
                // Also when the link failed already (its socket was shut here): poll reports it.
                l.fail(io::ErrorKind::ConnectionReset, format!("shm: rank {} {why}", l.peer));
                sh.raise_event();
                lost = true;
            }
        }
        if lost {
            watched.retain(|l| !l.failed());
        }
    }
}

fn accept_all(sh: &Arc<Shared>, listener: &UnixListener) {
    loop {
        match listener.accept() {
            Ok((s, _)) => admit(sh, s),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                // Out of fds or memory: leave the connection queued, try again shortly.
                static ACCEPT_FAILED: pm2_log::RateLimited =
                    pm2_log::RateLimited::new(Duration::from_secs(5));
                ACCEPT_FAILED
                    .note(|n| log::warn!("shm: rank {}: accept: {e}{}", sh.local.rank, pm2_log::repeats(n)));
                std::thread::sleep(Duration::from_millis(10));
                return;
            }
        }
    }
}

/// Sets an incoming connection up in its own thread.
fn admit(sh: &Arc<Shared>, s: UnixStream) {
    let ticket = match sh.setups.admit(&s) {
        Ok((t, _evicted)) => t,
        Err(why) => return sh.rejects.note(who(&s), why),
    };
    let shared = sh.clone();
    let spawned =
        std::thread::Builder::new().name("nmad-shm-setup".into()).spawn(move || {
            match setup::answer(&shared.local, s, &ticket) {
                Ok(link) => shared.push_accepted(link),
                Err(why) => shared.rejects.note("a process", why),
            }
        });
    if let Err(e) = spawned {
        sh.rejects.note("a process", format!("no thread for its setup: {e}"));
    }
}

/// The connecting process, as the kernel names it.
fn who(s: &UnixStream) -> String {
    match peer_cred(s) {
        Ok((pid, uid)) => format!("pid {pid} (uid {uid})"),
        Err(_) => "a process".into(),
    }
}
