//! The machine state policies decide on, and the *scope* of a context (which bound tasks it may
//! poll). Under marcel both come from the scheduler (idle LWPs, ready queues, the LWP's core);
//! without it, idle cores are estimated from the kernel's count of runnable threads
//! (`/proc/loadavg`, read at most once per millisecond).

use crate::policy::MachineState;
use crate::source::Binding;
use std::cell::Cell;

/// Which bound tasks a context may poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Scope {
    pub(crate) cpu: Option<usize>,
    pub(crate) numa: Option<usize>,
    /// May poll tasks bound to nothing.
    pub(crate) any: bool,
}

impl Scope {
    pub(crate) const ANYWHERE: Scope = Scope { cpu: None, numa: None, any: true };

    pub(crate) fn allows(&self, b: Binding) -> bool {
        match b {
            Binding::Anywhere => self.any,
            Binding::Core(c) => self.cpu == Some(c),
            Binding::Numa(n) => self.numa == Some(n),
        }
    }

    /// The scope of code running on OS CPU `cpu` (NUMA node from the topology).
    pub(crate) fn of_cpu(cpu: usize) -> Scope {
        Scope { cpu: Some(cpu), numa: Some(numa_of_cpu(cpu)), any: true }
    }

    /// The scope of the calling thread: its current CPU.
    pub(crate) fn here() -> Scope {
        // SAFETY: sched_getcpu has no preconditions.
        let c = unsafe { libc::sched_getcpu() };
        if c < 0 { Scope::ANYWHERE } else { Scope::of_cpu(c as usize) }
    }
}

pub(crate) fn topology() -> &'static marcel::topology::Topology {
    static T: std::sync::OnceLock<marcel::topology::Topology> = std::sync::OnceLock::new();
    T.get_or_init(marcel::topology::Topology::detect)
}

pub(crate) fn numa_of_cpu(cpu: usize) -> usize {
    topology().cores().iter().find(|c| c.pus.contains(&cpu)).map_or(0, |c| c.numa_node)
}

/// Machine state without marcel: the machine's online CPUs, and idle cores from the kernel's
/// runnable count (system-wide, minus the caller itself).
///
/// Both counts are machine-wide. Not the CPUs this thread may use: an MPI rank pinned to one
/// core would compare the whole machine's runnable threads (its peers spinning on their own
/// cores) with its single core, always find it busy, and never spin.
///
/// `refresh`: the count may be re-read if older than 1 ms. A waiter's first look at a wait does
/// not (it uses its last count, however old): reading `/proc/loadavg` takes microseconds on a VM,
/// just when a message may be arriving.
pub(crate) fn os_state(refresh: bool) -> MachineState {
    let cores = online_cpus();
    let runnable = runnable_threads(refresh);
    let others = runnable.saturating_sub(1);
    MachineState { cores, idle_cores: cores.saturating_sub(others), ..MachineState::default() }
}

/// CPUs online in the system (at least 1).
fn online_cpus() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *N.get_or_init(|| (unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }).max(1) as usize)
}

/// The first number of `/proc/loadavg`'s fourth field ("running/total"), cached for 1 ms per
/// thread: the count includes its reader, which `os_state` subtracts, so a value read by another
/// thread (a progression thread waking for its tick while the application spins) would count
/// that thread instead of the caller.
fn runnable_threads(refresh: bool) -> usize {
    thread_local! {
        /// (when read, clock ns; value)
        static CACHE: Cell<(u64, u64)> = const { Cell::new((0, 1)) };
    }
    // Asked at every wait: the TSC clock, not a clock_gettime.
    let now = crate::clock::now_ns();
    let (last, value) = CACHE.get();
    if last != 0 && (!refresh || now.saturating_sub(last) < 1_000_000) {
        return value as usize;
    }
    let v = read_loadavg().and_then(|s| runnable_of(&s)).unwrap_or(1);
    CACHE.set((now.max(1), v));
    v as usize
}

/// A small `/proc` file read into `buf`; the bytes read. Waiters call this: nothing is
/// allocated (`File::open` builds a short path's C string on the stack).
pub(crate) fn read_proc(path: &str, buf: &mut [u8]) -> Option<usize> {
    use std::io::Read;
    std::fs::File::open(path).ok()?.read(buf).ok()
}

/// `/proc/loadavg` read into a stack buffer, NUL-padded.
fn read_loadavg() -> Option<[u8; 128]> {
    let mut buf = [0u8; 128];
    let n = read_proc("/proc/loadavg", &mut buf)?;
    buf[n.min(127)..].fill(0);
    Some(buf)
}

/// The running count of a `/proc/loadavg` line ("0.76 0.51 0.91 3/210 4242"), NUL-padded.
fn runnable_of(line: &[u8]) -> Option<u64> {
    let line = line.split(|&b| b == 0).next()?;
    let field = line.split(|b| b.is_ascii_whitespace()).filter(|f| !f.is_empty()).nth(3)?;
    let running = field.split(|&b| b == b'/').next()?;
    std::str::from_utf8(running).ok()?.parse().ok()
}

/// Machine state under marcel, seen from LWP `vp` (or from outside any LWP). Kernel threads that
/// run user threads on a core without holding its LWP (hogs handed off by marcel) compete for that
/// core like ready threads do, and make it not idle.
pub(crate) fn marcel_state(h: &marcel::Handle, vp: Option<usize>) -> MachineState {
    let n = h.num_lwps();
    let mut idle = 0;
    let mut local_ready = 0;
    for v in 0..n {
        let s = h.vp_state(v);
        if s.phase == marcel::VpPhase::Idle && s.detached == 0 {
            idle += 1;
        }
        if Some(v) == vp {
            local_ready = s.ready + s.detached;
        }
    }
    MachineState { cores: n, idle_cores: idle, local_ready, under_marcel: true, ..MachineState::default() }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_running_count_is_read_from_loadavg() {
        let mut line = [0u8; 128];
        line[..26].copy_from_slice(b"0.76 0.51 0.91 3/210 4242\n");
        assert_eq!(runnable_of(&line), Some(3));
        assert_eq!(runnable_of(b"0.1 0.2 0.3"), None);
        assert!(read_loadavg().and_then(|l| runnable_of(&l)).is_some_and(|n| n >= 1));
    }

    #[test]
    fn scopes() {
        let s = Scope { cpu: Some(1), numa: Some(0), any: true };
        assert!(s.allows(Binding::Anywhere));
        assert!(s.allows(Binding::Core(1)));
        assert!(!s.allows(Binding::Core(0)));
        assert!(s.allows(Binding::Numa(0)));
        assert!(!Scope { any: false, ..s }.allows(Binding::Anywhere));
        let m = os_state(true);
        assert!(m.cores >= 1 && m.idle_cores <= m.cores);
    }
}
