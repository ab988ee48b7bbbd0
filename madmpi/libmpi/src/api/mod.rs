//! The exported functions, one file per chapter of the standard: [`env`](mod@env) (initialization,
//! threads, identification, timers, abort), [`errh`] (error handlers and strings), [`comm`]
//! (communicator queries, names, info hints, free), [`comm_create`] (dup, split, create),
//! [`comm_create_group`] (create_group, idup), [`intercomm`] (intercommunicators),
//! [`info`] (info objects, usable before `MPI_Init` and after `MPI_Finalize`), [`group`]
//! (groups), [`attr`] (keyvals and attributes), [`datatype`] (every datatype call, pack and
//! unpack), [`p2p`] (point-to-point: every send mode, receives, send-receives, blocking,
//! nonblocking and persistent; probes, counts), [`coll`], [`coll_gather`], [`coll_reduce`]
//! (collectives, blocking, nonblocking and persistent), `coll_inter` (collectives on
//! intercommunicators), [`nonblocking`] (freeing and cancelling requests), [`completion`] (waits
//! and tests), [`buffered`] (the attached buffer of buffered sends), [`mprobe`] (matched probes
//! and receives), [`persistent`] (starting persistent requests), [`op`] (reduction operations),
//! [`error_codes`] (classes, codes and strings the program adds), [`status`] (statuses the
//! program sets or converts, the Fortran status sentinels), [`profiling`] (`MPI_Pcontrol`),
//! [`gpu`] (MPICH's GPU support queries), [`tools`](mod@tools) with `tools_pvar`,
//! `tools_category` and `tools_event` (the MPI_T interface, which returns codes instead of
//! calling error handlers), [`grequest`] (generalized requests), [`partitioned`] (partitioned
//! communication), [`topo`], [`topo_cart`], [`topo_graph`] (process topologies) and
//! [`topo_neighbor`] (neighbourhood collectives), [`session`] (MPI 4.0 sessions and
//! `MPI_Comm_create_from_group`), [`ulfm`] (MPICH's `MPIX_Comm_*` fault tolerance), [`win`]
//! (one-sided windows: creation, shared queries, attached memory, free), [`win_attr`] (their
//! attributes, keyvals, names, info, groups and error handlers), [`rma`] and [`rma_sync`]
//! (one-sided operations and synchronization), [`file`](mod@file) (MPI-IO: opening, closing, deleting,
//! sizes, views, hints, atomicity, file pointers, `MPI_File_c2f`/`f2c`), [`file_access`] (every
//! read and write), [`file_errh`] (file error handlers) and [`datarep`]
//! (`MPI_Register_datarep`).
//!
//! The combinatorial families (blocking / nonblocking / persistent × `int` / `_c`) are not
//! written out: `family` generates them from one table entry per call, over one build function
//! that checks the arguments and returns a `madmpi::operation::Operation`; the file accesses
//! (explicit offset / individual / shared / ordered × blocking / nonblocking / collective /
//! split × `int` / `_c`) are one line each of `file_access`'s table.
//!
//! Each body resolves its handles, checks its arguments in parameter order (errors go to the
//! communicator's, window's or file's handler once it is known), then calls the madmpi Rust
//! API. The helpers here turn C buffers and strings into what that API takes.
//!
//! Owns the C signatures and the order of the checks; it must not implement MPI semantics.

pub mod attr;
pub mod buffered;
pub mod coll;
mod coll_blocks;
pub mod coll_gather;
mod coll_inter;
pub mod coll_reduce;
pub mod comm;
pub mod comm_create;
pub mod comm_create_group;
pub mod completion;
pub mod datarep;
pub mod datatype;
pub mod dynamic;
pub mod env;
pub mod errh;
pub mod error_codes;
mod family;
pub mod file;
pub mod file_access;
pub mod file_errh;
pub mod gpu;
pub mod grequest;
pub mod group;
pub mod info;
pub mod intercomm;
pub mod mprobe;
pub mod nonblocking;
pub mod op;
pub mod p2p;
pub mod partitioned;
pub mod persistent;
pub mod profiling;
pub mod rails;
pub mod rma;
pub mod rma_sync;
pub mod session;
pub mod status;
pub mod tools;
pub mod tools_category;
pub mod tools_event;
pub mod tools_pvar;
pub mod topo;
pub mod topo_cart;
pub mod topo_graph;
pub mod topo_neighbor;
pub mod ulfm;
pub mod win;
pub mod win_attr;

use crate::check;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::{c_char, c_int, c_void};

/// The nmad description of `count` elements of the committed type `ty` at `buf`: one range
/// for a contiguous type, a lazy layout otherwise (the data is never copied here).
///
/// # Safety
/// Every byte the type map addresses from `buf` must stay valid, for reads (sends) or writes
/// (receives), until the operation using the description completes.
unsafe fn data(ty: &Datatype, buf: *const c_void, count: i64) -> Result<nmad::Data, Error> {
    // SAFETY: the caller's contract is the engine's.
    Ok(unsafe { ty.data(buf.cast_mut().cast(), count) }?)
}

/// Writes `s` as a C string into `buf`, which has room for `cap` bytes (NUL included; `s` is
/// cut on a character boundary if longer), and its length in bytes to `len`.
///
/// # Safety
/// `buf`, if not null, must be valid for `cap` bytes of writes; `len` as [`check::out`].
unsafe fn write_string(
    s: &str,
    buf: *mut c_char,
    cap: c_int,
    len: *mut c_int,
    what: &str,
) -> Result<(), Error> {
    if buf.is_null() {
        return Err(Error::arg(format!("{what} is a null pointer")));
    }
    // SAFETY: the caller's contract.
    let len = unsafe { check::out(len, "the result length") }?;
    let mut n = s.len().min(usize::try_from(cap).unwrap_or(0).saturating_sub(1));
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    // SAFETY: `buf` has room for `cap > n` bytes (the caller's contract): `n` bytes of text and
    // the NUL; the source is a distinct Rust string.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    *len = n as c_int;
    Ok(())
}
