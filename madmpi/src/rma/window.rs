//! A window: its own communicator, what every member exposed, this process's memory, its
//! name and hints. Made by the constructors of [`super::create`].
//!
//! Owns the window's state and its queries; it must not run one-sided operations (they will
//! read [`Win::exposure`] and the memory through this type).

use super::dynamic::Regions;
use super::fast::Fast;
use super::hints::WinHints;
use super::origin::Origin;
use super::service::Service;
use super::target::WinCore;
use crate::comm::Comm;
use crate::comm::internal::allgather;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::node_shm::segment::Segment;
use std::alloc::Layout;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// How a window was made (`MPI_WIN_CREATE_FLAVOR`; the values are MPICH's constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Flavor {
    /// `MPI_Win_create`: memory the program owns.
    Create = 1,
    /// `MPI_Win_allocate`: memory MPI allocated.
    Allocate = 2,
    /// `MPI_Win_create_dynamic`: memory attached later.
    Dynamic = 3,
    /// `MPI_Win_allocate_shared`: one segment every member maps.
    Shared = 4,
}

/// What one member exposed, as exchanged at creation: its base address (in its own address
/// space; 0, `MPI_BOTTOM`, for a dynamic window), size in bytes, and displacement unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Exposure {
    pub base: usize,
    pub size: usize,
    pub disp_unit: usize,
}

/// Where this process's part of the window lives.
#[derive(Debug)]
pub(crate) enum Memory {
    /// The program's (`MPI_Win_create`): nothing to free.
    Program,
    /// Allocated here for `MPI_Win_allocate` across nodes; freed with the window.
    Private { ptr: *mut u8, layout: Layout },
    /// The node's segment, with each member's offset in it and the fast path's control area
    /// (shared windows, and allocated windows whose members are all on one node).
    Segment { segment: Segment, offsets: Vec<usize>, control: usize },
    /// What `MPI_Win_attach` added.
    Dynamic(Mutex<Regions>),
}

// SAFETY: `Private`'s pointer is to an allocation only this value frees; the memory itself is
// the program's to access (MPI's rules), never through this type.
unsafe impl Send for Memory {}
// SAFETY: as for Send; `Dynamic` is behind a mutex.
unsafe impl Sync for Memory {}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Memory::Private { ptr, layout } = *self {
            // SAFETY: `ptr` was allocated with `layout` at creation and is freed only here.
            unsafe { std::alloc::dealloc(ptr, layout) };
        }
    }
}

/// A window (`MPI_Win`). Freeing it is collective: [`Win::free`]; dropping it without
/// releases its resources without synchronizing with the other members.
pub struct Win {
    pub(crate) comm: Comm,
    pub(crate) flavor: Flavor,
    /// What the message handler shares: every member's exposure, this process's memory, the
    /// target side.
    pub(crate) core: Arc<WinCore>,
    /// The origin side (epochs, batches), one program call at a time.
    pub(crate) origin: Mutex<Origin>,
    /// The origin side of the fast path's hot calls, when the window is on it.
    pub(crate) fast: Option<Fast>,
    name: Mutex<String>,
    hints: Mutex<WinHints>,
}

impl std::fmt::Debug for Win {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Win")
            .field("context", &self.comm.context_id())
            .field("flavor", &self.flavor)
            .field("members", &self.core.members)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is one assignment or one map operation: a poisoned lock still holds a
    // consistent value.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Win {
    /// The window, once every member made its part: registered with the process's one-sided
    /// service, then one more exchange so that no member addresses a window not registered.
    pub(crate) fn new(
        comm: Comm,
        flavor: Flavor,
        members: Vec<Exposure>,
        memory: Memory,
        hints: WinHints,
    ) -> Result<Win> {
        let service = Service::of(comm.runtime())?;
        let n = comm.size();
        let peers = (0..n).map(|r| comm.world_rank(r).expect("a member")).collect();
        let ctx = comm.context_id();
        let core = WinCore::new(&comm, peers, members, memory, service.clone())?;
        service.add(ctx, &core);
        let fast = core.shm.as_ref().map(|shm| Fast::new(shm, hints.no_locks));
        let win = Win {
            origin: Mutex::new(Origin::new(ctx, n as usize)),
            fast,
            comm,
            flavor,
            core,
            name: Mutex::new(String::new()),
            hints: Mutex::new(hints),
        };
        win.quiesce()?;
        Ok(win)
    }

    /// The window's own communicator (a duplicate of the one it was made over).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// `MPI_Win_get_group`: the group of the communicator it was made over.
    pub fn group(&self) -> &Group {
        self.comm.group()
    }

    /// `MPI_WIN_CREATE_FLAVOR`.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// What member `rank` exposed (`None` for a rank outside the window).
    pub fn exposure(&self, rank: u32) -> Option<Exposure> {
        self.core.members.get(rank as usize).copied()
    }

    /// `MPI_WIN_BASE`, `MPI_WIN_SIZE`, `MPI_WIN_DISP_UNIT`: this process's exposure.
    pub fn local(&self) -> Exposure {
        self.core.members[self.comm.rank() as usize]
    }

    /// `MPI_Win_get_name` (empty until set).
    pub fn name(&self) -> String {
        lock(&self.name).clone()
    }

    /// `MPI_Win_set_name`.
    pub fn set_name(&self, name: &str) {
        *lock(&self.name) = name.to_string();
    }

    /// The hints the window honours.
    pub fn hints(&self) -> WinHints {
        *lock(&self.hints)
    }

    /// `MPI_Win_set_info`: the recognized keys of `info` update the hints.
    pub fn set_info(&self, info: &crate::info::Info) {
        let mut h = lock(&self.hints);
        h.update(info);
        if let Some(f) = &self.fast {
            f.no_locks.store(h.no_locks, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// `MPI_Win_shared_query`: member `rank`'s part in this process's mapping (its address,
    /// size, displacement unit); `None` (`MPI_PROC_NULL`) names the first member with a
    /// non-empty part (member 0's if all are empty). `MPI_ERR_RMA_FLAVOR` unless the window is
    /// shared; `MPI_ERR_RANK` for a rank outside it.
    pub fn shared_query(&self, rank: Option<u32>) -> Result<(*mut u8, usize, usize)> {
        let (Flavor::Shared, Memory::Segment { segment, offsets, .. }) = (self.flavor, &self.core.memory)
        else {
            return Err(Error::rma_flavor(format!("{:?} window, not a shared one", self.flavor)));
        };
        let r = match rank {
            Some(r) if r as usize >= self.core.members.len() => {
                return Err(Error::rank(format!(
                    "rank {r} is not in the window's {} ranks",
                    self.core.members.len()
                )));
            }
            Some(r) => r as usize,
            None => self.core.members.iter().position(|e| e.size > 0).unwrap_or(0),
        };
        let e = self.core.members[r];
        // SAFETY: `create::layout` made the segment at least as long as the end of the last part,
        // so every member's offset is within this mapping of it.
        let ptr = unsafe { segment.base().add(offsets[r]) };
        Ok((ptr, e.size, e.disp_unit))
    }

    /// `MPI_Win_attach`: `len` bytes at `base` join the window (`MPI_ERR_RMA_FLAVOR` unless it
    /// is dynamic; `MPI_ERR_RMA_ATTACH` if they overlap attached memory).
    pub fn attach(&self, base: *const u8, len: usize) -> Result<()> {
        self.regions()?.attach(base as usize, len)
    }

    /// `MPI_Win_detach`: the memory attached at `base` leaves the window.
    pub fn detach(&self, base: *const u8) -> Result<()> {
        self.regions()?.detach(base as usize).map(drop)
    }

    /// Whether `len` bytes at `addr` lie in memory attached to this dynamic window (what a
    /// target checks before it applies an operation).
    pub fn attached(&self, addr: usize, len: usize) -> bool {
        self.regions().is_ok_and(|r| r.covers(addr, len))
    }

    fn regions(&self) -> Result<MutexGuard<'_, Regions>> {
        match &self.core.memory {
            Memory::Dynamic(r) => Ok(lock(r)),
            _ => Err(Error::rma_flavor(format!("{:?} window, not a dynamic one", self.flavor))),
        }
    }

    /// `MPI_Win_free` (collective): returns once every member called it, so no member still
    /// uses the memory it exposed; then releases this process's resources (unmaps the shared
    /// segment, frees allocated memory).
    pub fn free(self) -> Result<()> {
        self.quiesce()
    }

    /// The collective part of [`Win::free`], for an owner that drops the window later (the C
    /// library, whose handle an erroneous racing call may still hold).
    pub fn quiesce(&self) -> Result<()> {
        self.comm.internal(|m| allgather(m, 0, &[0u8]).map(drop).map_err(crate::comm::from_nmad))
    }
}

impl Drop for Win {
    fn drop(&mut self) {
        self.core.service.remove(self.core.ctx);
    }
}
