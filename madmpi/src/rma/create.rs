//! The window constructors, collective over an intracommunicator: `MPI_Win_create`,
//! `MPI_Win_allocate`, `MPI_Win_allocate_shared`, `MPI_Win_create_dynamic`.
//!
//! Each duplicates the communicator (the window's messages get a context of their own), then
//! the members exchange what they expose (base, size, displacement unit) in one allgather, which
//! also carries whether each member succeeded: a failure anywhere fails the call everywhere,
//! with the class the first failing member saw, so no member keeps a window the others lack.
//!
//! Shared memory: `MPI_Win_allocate_shared` needs every member on one node (else
//! `MPI_ERR_RMA_SHARED` everywhere, found in the first exchange). Member 0 creates one memfd
//! segment for all the parts and serves its fd to the others ([`crate::node_shm::fdpass`]); each maps it.
//! Parts are contiguous (member i+1's starts where member i's ends) unless
//! `alloc_shared_noncontig` (member 0's value) asks for each on a page of its own.
//!
//! `MPI_Win_allocate` uses the same segment when every member is on one node and runs nmad's
//! shm driver: the memory the operations target is then memory the origin maps, so they become
//! loads and stores. Across
//! nodes each member allocates its part privately (64-byte aligned).

use super::hints::WinHints;
use super::shm;
use super::window::{Exposure, Flavor, Memory, Win};
use crate::comm::internal::allgather;
use crate::comm::{Comm, from_nmad};
use crate::error::{Error, ErrorClass, Result};
use crate::info::Info;
use crate::node_shm::fdpass::{self, Server};
use crate::node_shm::segment::{Segment, page_rounded, page_size};
use std::alloc::Layout;

/// Alignment of privately allocated parts (a cache line).
const PRIVATE_ALIGN: usize = 64;

/// The nonce member 0 gives when it has no socket to serve on (the others then do not connect:
/// they could reach the socket of another window being made).
const NO_SERVER: u64 = u64::MAX;

/// The fixed-size record of the first exchange of the allocating constructors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) node: u64,
    pub(super) pid: u32,
    /// Member 0's socket nonce (unused elsewhere).
    pub(super) nonce: u64,
    pub(super) size: u64,
    pub(super) noncontig: bool,
    /// nmad's shm driver runs here: an allocated window may then live in the node's segment
    /// (without it the job asked for its messages to go over the network, as MPICH's
    /// `MPIR_CVAR_NOLOCAL`, and one-sided operations follow).
    pub(super) direct: bool,
}

impl Plan {
    const LEN: usize = 29;

    pub(super) fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..8].copy_from_slice(&self.node.to_le_bytes());
        b[8..12].copy_from_slice(&self.pid.to_le_bytes());
        b[12..20].copy_from_slice(&self.nonce.to_le_bytes());
        b[20..28].copy_from_slice(&self.size.to_le_bytes());
        b[28] = u8::from(self.noncontig) | (u8::from(self.direct) << 1);
        b
    }

    pub(super) fn decode(b: &[u8]) -> Plan {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Plan {
            node: u64_at(0),
            pid: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
            nonce: u64_at(12),
            size: u64_at(20),
            noncontig: b[28] & 1 != 0,
            direct: b[28] & 2 != 0,
        }
    }
}

/// The record of the final exchange: the member's outcome (0, or its error class) and exposure.
const FINAL_LEN: usize = 28;

fn encode_final(outcome: &Result<Exposure>) -> [u8; FINAL_LEN] {
    let mut b = [0u8; FINAL_LEN];
    match outcome {
        Ok(e) => {
            b[4..12].copy_from_slice(&(e.base as u64).to_le_bytes());
            b[12..20].copy_from_slice(&(e.size as u64).to_le_bytes());
            b[20..28].copy_from_slice(&(e.disp_unit as u64).to_le_bytes());
        }
        Err(e) => b[..4].copy_from_slice(&e.class().code().to_le_bytes()),
    }
    b
}

/// Every member's exposure, or the error of the first member that failed (ours if we did).
fn exchange_final(comm: &Comm, mine: Result<Exposure>) -> Result<Vec<Exposure>> {
    let all = comm.internal(|m| allgather(m, 0, &encode_final(&mine)).map_err(from_nmad))?;
    mine.as_ref().map_err(Clone::clone)?;
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let mut out = Vec::with_capacity(comm.size() as usize);
    for (r, b) in all.chunks_exact(FINAL_LEN).enumerate() {
        let class = i32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
        if class != 0 {
            let class = ErrorClass::from_code(class).unwrap_or(ErrorClass::Other);
            return Err(Error::new(class, format!("window creation failed at rank {r}")));
        }
        let (base, size, unit) = (u64_at(b, 4), u64_at(b, 12), u64_at(b, 20));
        let size =
            usize::try_from(size).map_err(|_| Error::intern(format!("rank {r} exposes {size} bytes")))?;
        out.push(Exposure { base: base as usize, size, disp_unit: unit as usize });
    }
    Ok(out)
}

/// The window's communicator: a duplicate of `comm`, which must be an intracommunicator.
fn window_comm(comm: &Comm) -> Result<Comm> {
    if comm.is_inter() {
        return Err(Error::comm("windows are made over intracommunicators, not intercommunicators"));
    }
    comm.dup()
}

fn check_disp_unit(disp_unit: usize) -> Result<()> {
    if disp_unit == 0 {
        return Err(Error::arg("the displacement unit must be positive"));
    }
    Ok(())
}

impl Win {
    /// `MPI_Win_create` (collective): exposes the program's `size` bytes at `base`.
    ///
    /// # Safety
    /// `base` must stay valid for `size` bytes of reads and writes until the window is freed;
    /// the operations will access it as MPI's rules allow.
    pub unsafe fn create(
        base: *mut u8,
        size: usize,
        disp_unit: usize,
        info: &Info,
        comm: &Comm,
    ) -> Result<Win> {
        check_disp_unit(disp_unit)?;
        let wc = window_comm(comm)?;
        let members = exchange_final(&wc, Ok(Exposure { base: base as usize, size, disp_unit }))?;
        Win::new(wc, Flavor::Create, members, Memory::Program, WinHints::from_info(info))
    }

    /// `MPI_Win_create_dynamic` (collective): a window without memory until
    /// [`Win::attach`].
    pub fn create_dynamic(info: &Info, comm: &Comm) -> Result<Win> {
        let wc = window_comm(comm)?;
        let members = exchange_final(&wc, Ok(Exposure { base: 0, size: 0, disp_unit: 1 }))?;
        Win::new(wc, Flavor::Dynamic, members, Memory::Dynamic(Default::default()), WinHints::from_info(info))
    }

    /// `MPI_Win_allocate` (collective): `size` bytes allocated for this member (see the module's
    /// documentation for where); its address is [`Win::local`]`.base`.
    pub fn allocate(size: usize, disp_unit: usize, info: &Info, comm: &Comm) -> Result<Win> {
        Win::allocating(Flavor::Allocate, size, disp_unit, info, comm)
    }

    /// `MPI_Win_allocate_shared` (collective, every member on one node): `size` bytes of one
    /// segment every member maps; [`Win::shared_query`] finds the other members' parts.
    pub fn allocate_shared(size: usize, disp_unit: usize, info: &Info, comm: &Comm) -> Result<Win> {
        Win::allocating(Flavor::Shared, size, disp_unit, info, comm)
    }

    fn allocating(flavor: Flavor, size: usize, disp_unit: usize, info: &Info, comm: &Comm) -> Result<Win> {
        check_disp_unit(disp_unit)?;
        let hints = WinHints::from_info(info);
        let wc = window_comm(comm)?;
        let leader = wc.rank() == 0;
        let server =
            if leader { Some(Server::bind().map_err(|e| Error::other(format!("{e}")))) } else { None };
        let mine = Plan {
            node: wc.runtime().node,
            pid: std::process::id(),
            nonce: server.as_ref().and_then(|s| s.as_ref().ok()).map_or(NO_SERVER, |s| s.nonce),
            size: size as u64,
            noncontig: hints.alloc_shared_noncontig,
            direct: wc.runtime().nm.driver_stats().iter().any(|d| d.name == "shm"),
        };
        let all = wc.internal(|m| allgather(m, 0, &mine.encode()).map_err(from_nmad))?;
        let plans: Vec<Plan> = all.chunks_exact(Plan::LEN).map(Plan::decode).collect();
        let made = match in_segment(flavor, &plans) {
            Ok(true) => shared_part(&wc, &plans, server),
            Ok(false) => private_part(size),
            Err(e) => Err(e),
        };
        let mine =
            made.as_ref().map(|(_, base)| Exposure { base: *base, size, disp_unit }).map_err(Clone::clone);
        let members = exchange_final(&wc, mine)?;
        // exchange_final returned our own error if we had one.
        let (memory, _) = made.expect("succeeded here");
        Win::new(wc, flavor, members, memory, hints)
    }
}

/// Whether the window's memory is one segment of the node (every member on one node); an
/// `MPI_ERR_RMA_SHARED` error for a shared window over several nodes.
pub(super) fn in_segment(flavor: Flavor, plans: &[Plan]) -> Result<bool> {
    let one_node = plans.iter().all(|p| p.node == plans[0].node);
    match (flavor, one_node) {
        (Flavor::Shared, false) => Err(Error::rma_shared(
            "MPI_Win_allocate_shared needs every member of the communicator on one node",
        )),
        (Flavor::Shared, true) => Ok(true),
        (_, one_node) => Ok(one_node && plans.iter().all(|p| p.direct)),
    }
}

/// Where each member's part starts in the segment, where the control area of the fast path
/// starts (on the page after the parts), and the segment's length.
pub(super) fn layout(plans: &[Plan]) -> Result<(Vec<usize>, usize, usize)> {
    let noncontig = plans[0].noncontig;
    let page = page_size();
    let mut offsets = Vec::with_capacity(plans.len());
    let mut end: usize = 0;
    for p in plans {
        let size = usize::try_from(p.size).map_err(|_| Error::no_mem("a part larger than memory"))?;
        if noncontig {
            end = end.div_ceil(page).checked_mul(page).ok_or_else(|| Error::no_mem("segment too large"))?;
        }
        offsets.push(end);
        end = end.checked_add(size).ok_or_else(|| Error::no_mem("segment too large"))?;
    }
    let control = page_rounded(end);
    let len = control
        .checked_add(shm::control_len(plans.len()))
        .ok_or_else(|| Error::no_mem("segment too large"))?;
    Ok((offsets, control, page_rounded(len)))
}

/// This member's mapping of the node's segment, and its part's address.
fn shared_part(wc: &Comm, plans: &[Plan], server: Option<Result<Server>>) -> Result<(Memory, usize)> {
    let (offsets, control, len) = layout(plans)?;
    let segment = match server {
        Some(server) => {
            let server = server?;
            let (segment, fd) = Segment::create(len).map_err(|e| Error::no_mem(e.to_string()))?;
            let others: Vec<u32> = plans[1..].iter().map(|p| p.pid).collect();
            server.serve(&fd, &others).map_err(|e| Error::rma_shared(format!("passing the segment: {e}")))?;
            segment
        }
        None if plans[0].nonce == NO_SERVER => {
            return Err(Error::rma_shared("rank 0 could not open a socket to pass the segment"));
        }
        None => {
            let fd = fdpass::fetch(plans[0].pid, plans[0].nonce)
                .map_err(|e| Error::rma_shared(format!("receiving the segment from rank 0: {e}")))?;
            Segment::attach(&fd, len).map_err(|e| Error::rma_shared(e.to_string()))?
        }
    };
    debug_assert!(offsets.iter().zip(plans).all(|(&o, p)| o + p.size as usize <= segment.len()));
    // SAFETY: this member's offset plus its size is within the segment (layout computed both).
    let base = unsafe { segment.base().add(offsets[wc.rank() as usize]) } as usize;
    Ok((Memory::Segment { segment, offsets, control }, base))
}

/// A private allocation of `size` bytes, and its address.
pub(super) fn private_part(size: usize) -> Result<(Memory, usize)> {
    let layout = Layout::from_size_align(size.max(1), PRIVATE_ALIGN)
        .map_err(|_| Error::no_mem(format!("{size} bytes cannot be allocated")))?;
    // SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(Error::no_mem(format!("{size} bytes could not be allocated")));
    }
    Ok((Memory::Private { ptr, layout }, ptr as usize))
}
