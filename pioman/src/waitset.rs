//! Waiting for events without spinning: epoll sets of the sources' fds, and doorbells.
//!
//! Each scope (anywhere, each NUMA node, each core) has a shared epoll set holding the fds of the
//! blocking-capable sources bound there; registering a source touches only that set. A context
//! that blocks owns a small epoll set of its own holding the shared sets of its scope (nested epoll:
//! a set is readable while one of its fds is) plus its *doorbell*, an eventfd that whoever
//! completes the request it waits for rings (through the condition's wake table), so it never
//! sleeps past its own completion.

use crate::machine::Scope;
use crate::source::Binding;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(rc) }
}

fn epoll_create() -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 takes only flags; a non-negative return is a new fd we own.
    let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn epoll_ctl(epfd: RawFd, op: libc::c_int, fd: RawFd) -> io::Result<()> {
    let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd as u64 };
    // SAFETY: both fds are caller-provided open descriptors; `ev` is a valid epoll_event.
    cvt(unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) }).map(|_| ())
}

/// An eventfd another thread rings to wake a context sleeping in epoll.
#[derive(Debug)]
pub(crate) struct Doorbell {
    fd: OwnedFd,
}

impl Doorbell {
    pub(crate) fn new() -> io::Result<Doorbell> {
        // SAFETY: eventfd takes an initial value and flags; a non-negative return is our fd.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: fresh fd owned by nobody else.
        Ok(Doorbell { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    pub(crate) fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a local u64 to our eventfd (EAGAIN only at counter overflow,
        // when it is already rung).
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Resets the doorbell (non-blocking).
    pub(crate) fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a local u64 from our non-blocking eventfd.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    pub(crate) fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// The shared epoll set of every scope.
pub(crate) struct ScopeSets {
    any: OwnedFd,
    numa: HashMap<usize, OwnedFd>,
    core: HashMap<usize, OwnedFd>,
}

impl ScopeSets {
    /// Sets for every allowed CPU and every NUMA node.
    pub(crate) fn new() -> io::Result<ScopeSets> {
        let mut numa = HashMap::new();
        let mut core = HashMap::new();
        for c in crate::machine::topology().cores() {
            for &pu in &c.pus {
                core.insert(pu, epoll_create()?);
            }
            if let std::collections::hash_map::Entry::Vacant(e) = numa.entry(c.numa_node) {
                e.insert(epoll_create()?);
            }
        }
        Ok(ScopeSets { any: epoll_create()?, numa, core })
    }

    fn set_for(&self, b: Binding) -> io::Result<RawFd> {
        let fd = match b {
            Binding::Anywhere => Some(&self.any),
            Binding::Numa(n) => self.numa.get(&n),
            Binding::Core(c) => self.core.get(&c),
        };
        fd.map(|f| f.as_raw_fd()).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("pioman: no such scope {b:?}"))
        })
    }

    /// Watches `fd` (a blocking-capable source) in the set of `b`.
    pub(crate) fn add(&self, b: Binding, fd: RawFd) -> io::Result<()> {
        epoll_ctl(self.set_for(b)?, libc::EPOLL_CTL_ADD, fd)
    }

    pub(crate) fn remove(&self, b: Binding, fd: RawFd) {
        if let Ok(set) = self.set_for(b) {
            let _ = epoll_ctl(set, libc::EPOLL_CTL_DEL, fd);
        }
    }

    /// The shared sets a context of `scope` waits on.
    fn sets_of(&self, scope: Scope) -> Vec<RawFd> {
        let mut v = Vec::new();
        if scope.any {
            v.push(self.any.as_raw_fd());
        }
        if let Some(n) = scope.numa.and_then(|n| self.numa.get(&n)) {
            v.push(n.as_raw_fd());
        }
        if let Some(c) = scope.cpu.and_then(|c| self.core.get(&c)) {
            v.push(c.as_raw_fd());
        }
        v
    }
}

/// One context's way to sleep until a source of its scope has an event or its doorbell rings.
pub(crate) struct WaitSet {
    epfd: OwnedFd,
    pub(crate) doorbell: std::sync::Arc<Doorbell>,
    pub(crate) scope: Scope,
}

impl WaitSet {
    pub(crate) fn new(sets: &ScopeSets, scope: Scope) -> io::Result<WaitSet> {
        let epfd = epoll_create()?;
        for s in sets.sets_of(scope) {
            epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, s)?;
        }
        let doorbell = std::sync::Arc::new(Doorbell::new()?);
        epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, doorbell.raw())?;
        Ok(WaitSet { epfd, doorbell, scope })
    }

    /// Sleeps until an event, a doorbell ring, or `timeout`. Returns whether something (not the
    /// timeout) ended the sleep. The doorbell is reset.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> bool {
        let ms = timeout
            .map_or(-1, |d| d.as_millis().clamp(if d.is_zero() { 0 } else { 1 }, i32::MAX as u128) as i32);
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 4];
        // SAFETY: `evs` is a valid buffer of 4 events; epfd is ours.
        let n = unsafe { libc::epoll_wait(self.epfd.as_raw_fd(), evs.as_mut_ptr(), evs.len() as i32, ms) };
        if n > 0 && evs[..n as usize].iter().any(|e| e.u64 == self.doorbell.raw() as u64) {
            self.doorbell.drain();
        }
        n > 0
    }
}

impl WaitSet {
    /// Sleeps until the doorbell rings or `timeout` (the sources' fds are not watched: another
    /// context watches them). Returns whether the doorbell rang; it is reset.
    pub(crate) fn wait_doorbell(&self, timeout: Option<Duration>) -> bool {
        let ms = timeout.map_or(-1, |d| d.as_millis().clamp(1, i32::MAX as u128) as i32);
        let mut p = libc::pollfd { fd: self.doorbell.raw(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd on our own eventfd.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n > 0 {
            self.doorbell.drain();
        }
        n > 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn source_fd_and_doorbell_wake_the_wait_set() {
        let sets = ScopeSets::new().unwrap();
        let src = Doorbell::new().unwrap(); // any readable fd will do as a source
        sets.add(Binding::Anywhere, src.raw()).unwrap();
        let ws = WaitSet::new(&sets, Scope::ANYWHERE).unwrap();
        let t = Instant::now();
        assert!(!ws.wait(Some(Duration::from_millis(10))), "nothing yet");
        assert!(t.elapsed() >= Duration::from_millis(9));
        src.ring();
        assert!(ws.wait(Some(Duration::from_secs(5))));
        src.drain();
        let d = ws.doorbell.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            d.ring();
        });
        assert!(ws.wait(Some(Duration::from_secs(5))));
        h.join().unwrap();
        assert!(!ws.wait(Some(Duration::ZERO)), "doorbell was reset");
        sets.remove(Binding::Anywhere, src.raw());
        src.ring();
        assert!(!ws.wait(Some(Duration::ZERO)), "removed sources do not wake");
    }

    #[test]
    fn bound_sources_wake_only_their_scope() {
        let sets = ScopeSets::new().unwrap();
        let cpu = marcel::topology::allowed_cpus()[0];
        let src = Doorbell::new().unwrap();
        sets.add(Binding::Core(cpu), src.raw()).unwrap();
        let mine = WaitSet::new(&sets, Scope { cpu: Some(cpu), numa: None, any: false }).unwrap();
        let other = WaitSet::new(&sets, Scope::ANYWHERE).unwrap();
        src.ring();
        assert!(mine.wait(Some(Duration::from_secs(1))));
        assert!(!other.wait(Some(Duration::ZERO)));
        assert!(sets.add(Binding::Core(100_000), src.raw()).is_err());
    }
}
