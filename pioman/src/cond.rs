//! Completion conditions: a bit mask a thread waits on until a progression context sets bits
//! (like `piom_cond`).
//!
//! The signaller's `fetch_or` is its **last access** to the condition: it learns from the old value
//! whether anyone waits, and wakes waiters through a process-wide table keyed by the condition's
//! *address*, which it never dereferences (as the kernel's futex does). So a waiter may free the
//! condition as soon as it sees its bits — a request on the waiter's stack is fine.
//!
//! Waiting itself (spin, drive progress, block) is the engine's business; this module only offers
//! "sleep until this address is signalled" for three kinds of sleepers: marcel user threads (park
//! only the user thread), OS threads (park the OS thread), and blocking contexts that sleep in
//! `epoll` (a doorbell eventfd).

use crate::loom::Mutex;
use crate::loom::atomic::{AtomicU32, Ordering::*};
use std::sync::Arc;

/// Set in the word by a waiter before it sleeps: the signaller must look in the wake table.
const WAITER: u32 = 1 << 31;

/// A bit mask of events (31 usable bits; bit 31 is internal).
#[derive(Debug, Default)]
pub struct Cond {
    bits: AtomicU32,
    /// Under loom: set when the waiter "frees" the condition; every later access is a bug.
    #[cfg(loom)]
    freed: loom::sync::atomic::AtomicBool,
}

/// A sleeper's means of being woken.
#[derive(Clone)]
pub(crate) enum Wake {
    /// A marcel user thread or an OS thread (marcel's `Thread::unpark` handles both).
    Thread(marcel::Thread),
    /// A context sleeping in epoll on this eventfd.
    Doorbell(Arc<crate::waitset::Doorbell>),
    /// Under loom: a model thread.
    #[cfg(loom)]
    Loom(loom::thread::Thread),
}

impl Wake {
    fn wake(&self) {
        match self {
            Wake::Thread(t) => t.unpark(),
            Wake::Doorbell(d) => d.ring(),
            #[cfg(loom)]
            Wake::Loom(t) => t.unpark(),
        }
    }
}

impl Cond {
    /// The bits usable by callers.
    pub const MASK: u32 = !WAITER;

    pub fn new() -> Cond {
        Cond {
            bits: AtomicU32::new(0),
            #[cfg(loom)]
            freed: loom::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The word; under loom, asserts the condition was not freed yet.
    #[inline]
    fn word(&self) -> &AtomicU32 {
        #[cfg(loom)]
        assert!(!self.freed.load(SeqCst), "condition used after its waiter freed it");
        &self.bits
    }

    /// Under loom: the waiter is done with the condition (models freeing it).
    #[cfg(loom)]
    pub(crate) fn mark_freed(&self) {
        self.freed.store(true, SeqCst);
    }

    /// Whether any bit of `mask` is set.
    #[inline]
    pub fn test(&self, mask: u32) -> bool {
        self.word().load(Acquire) & mask & Self::MASK != 0
    }

    /// The bits set so far.
    pub fn get(&self) -> u32 {
        self.word().load(Acquire) & Self::MASK
    }

    /// Clears `mask` (the owner re-arms the condition before reusing it).
    pub fn clear(&self, mask: u32) {
        self.word().fetch_and(!(mask & Self::MASK), AcqRel);
    }

    /// Sets `mask` and wakes whoever sleeps on this condition. After the atomic `fetch_or` the
    /// condition is not touched again: only its address is used, as a key.
    pub fn signal(&self, mask: u32) {
        let key = self as *const Cond as usize;
        let old = self.word().fetch_or(mask & Self::MASK, AcqRel);
        if old & WAITER != 0 {
            table().wake_all(key);
        }
    }

    /// Sleeps until some bit of `mask` is set (or spuriously, or after `timeout` where the sleeper
    /// supports one): registers `wake`, then calls `sleep`, then unregisters. Returns at once if a
    /// bit is already set. `sleep` must return when `wake` is used.
    pub(crate) fn sleep_until(&self, mask: u32, wake: Wake, sleep: impl FnOnce()) {
        let key = self as *const Cond as usize;
        let t = table();
        let b = t.bucket(key);
        let id = {
            let mut q = b.lock().unwrap();
            // Publish WAITER and check the bits in one step, under the bucket lock: a signaller
            // either set its bits before (we see them and do not sleep) or sees WAITER and then
            // takes this lock after us (and finds our entry).
            let old = self.word().fetch_or(WAITER, AcqRel);
            if old & mask & Self::MASK != 0 {
                return;
            }
            let id = t.next_id();
            q.push(Entry { key, id, wake });
            id
        };
        sleep();
        // Not woken through the table (spurious wake-up, timeout, or woken by another path):
        // remove our entry; the condition is still ours (we have not returned yet).
        b.lock().unwrap().retain(|e| e.id != id);
    }
}

struct Entry {
    key: usize,
    id: u64,
    wake: Wake,
}

const BUCKETS: usize = 64;

/// Sleepers by condition address. Entries own their wake handles, so waking never follows a
/// pointer into a condition or a waiter's stack.
pub(crate) struct WakeTable {
    buckets: Vec<crossbeam_utils::CachePadded<Mutex<Vec<Entry>>>>,
    ids: AtomicU32,
}

impl WakeTable {
    fn new() -> Self {
        WakeTable {
            buckets: (0..BUCKETS)
                .map(|_| crossbeam_utils::CachePadded::new(Mutex::new(Vec::new())))
                .collect(),
            ids: AtomicU32::new(0),
        }
    }

    fn bucket(&self, key: usize) -> &Mutex<Vec<Entry>> {
        // Conditions are at least 4-byte aligned: drop the low bits, mix the rest.
        let h = (key >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58;
        &self.buckets[h % BUCKETS]
    }

    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Relaxed) as u64
    }

    /// Wakes (and removes) every sleeper on `key`. The key is only compared, never dereferenced.
    fn wake_all(&self, key: usize) {
        let woken: Vec<Wake> = {
            let mut q = self.bucket(key).lock().unwrap();
            let mut out = Vec::new();
            q.retain(|e| {
                if e.key == key {
                    out.push(e.wake.clone());
                    false
                } else {
                    true
                }
            });
            out
        };
        for w in woken {
            w.wake();
        }
    }
}

#[cfg(not(loom))]
fn table() -> &'static WakeTable {
    static T: std::sync::OnceLock<WakeTable> = std::sync::OnceLock::new();
    T.get_or_init(WakeTable::new)
}

// Under loom every model gets a fresh table (statics would leak state between executions).
#[cfg(loom)]
fn table() -> &'static WakeTable {
    loom::lazy_static! {
        static ref T: WakeTable = WakeTable::new();
    }
    &T
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    fn os_sleep(c: &Cond, mask: u32) {
        c.sleep_until(mask, Wake::Thread(marcel::current()), || {
            std::thread::park_timeout(Duration::from_secs(5))
        });
    }

    #[test]
    fn signal_before_wait_returns_at_once() {
        let c = Cond::new();
        c.signal(0b10);
        assert!(c.test(0b10));
        assert!(!c.test(0b01));
        let t = std::time::Instant::now();
        os_sleep(&c, 0b10);
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn signal_wakes_an_os_thread_and_the_waiter_may_free_the_condition() {
        for _ in 0..200 {
            let c = Box::new(Cond::new());
            let addr = &*c as *const Cond as usize;
            let h = std::thread::spawn(move || {
                // SAFETY: the main thread frees `c` only after seeing the bit, i.e. after this
                // thread's fetch_or in `signal`, which is signal's last access to `c`.
                let c = unsafe { &*(addr as *const Cond) };
                c.signal(1);
            });
            while !c.test(1) {
                os_sleep(&c, 1);
            }
            drop(c); // freed while the signaller may still be waking us
            h.join().unwrap();
        }
    }

    #[test]
    fn clear_rearms() {
        let c = Cond::new();
        c.signal(3);
        c.clear(1);
        assert_eq!(c.get(), 2);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;

    /// A waiter and a signaller: the waiter never sleeps forever (loom reports a deadlock), and the
    /// signaller never touches the condition after the waiter freed it (every access asserts the
    /// `freed` flag, which the waiter sets as soon as it saw its bit; the Arc only keeps loom's
    /// memory valid).
    #[test]
    fn loom_cond_no_lost_wakeup_no_use_after_free() {
        loom::model(|| {
            let c = Arc::new(Cond::new());
            let c2 = c.clone();
            let signaller = loom::thread::spawn(move || c2.signal(1));
            while !c.test(1) {
                c.sleep_until(1, Wake::Loom(loom::thread::current()), loom::thread::park);
            }
            c.mark_freed();
            signaller.join().unwrap();
        });
    }

    /// Two waiters with different masks, two signals.
    #[test]
    fn loom_cond_two_waiters() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(|| {
            let c = Arc::new(Cond::new());
            let ws: Vec<_> = [1u32, 2]
                .into_iter()
                .map(|m| {
                    let c = c.clone();
                    loom::thread::spawn(move || {
                        while !c.test(m) {
                            c.sleep_until(m, Wake::Loom(loom::thread::current()), loom::thread::park);
                        }
                    })
                })
                .collect();
            c.signal(1);
            c.signal(2);
            for w in ws {
                w.join().unwrap();
            }
        });
    }
}
