//! `MPI_Isendrecv` and `MPI_Isendrecv_replace`: a receive and a send started together, one
//! request that completes when both have, with the receive's status. Both halves are nmad
//! requests, so they progress in the background like any other. The replace form packs the
//! outgoing message into a buffer the request owns before the receive may overwrite it (as
//! MPICH does), so it needs no action at completion.
//!
//! Owns the send half of these requests; completion is the parent module's.

use super::{Kind, Mode, RawRequest};
use crate::comm::Comm;
use crate::comm::{From, Rank, Tag};
use crate::error::Result;
use nmad::Data;

/// The send of a send-receive, and the packed message it sends from (replace form).
pub(super) struct SendHalf {
    /// Declared first, so dropped first: its drop waits for the send, then `packed` goes.
    pub(super) send: RawRequest,
    _packed: Option<Box<[u8]>>,
}

impl RawRequest {
    /// `MPI_Isendrecv`: receives into `recv` from `from` (posted first, as `MPI_Sendrecv`) and
    /// sends `send` to `dest`.
    ///
    /// # Safety
    /// `send` must stay valid for reads and `recv` for writes until the request completes (or
    /// is dropped).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn isendrecv(
        comm: &Comm,
        send: Data,
        dest: Rank,
        send_tag: i32,
        recv: Data,
        from: From,
        recv_tag: Tag,
    ) -> Result<RawRequest> {
        // SAFETY: `recv` is writable until the returned request completes (our contract), and
        // that request owns this one.
        let mut r = unsafe { RawRequest::irecv(comm, recv, from, recv_tag) }?;
        // SAFETY: `send` is readable as long (our contract).
        let s = unsafe { RawRequest::isend(comm, send, dest, send_tag, Mode::Standard) }?;
        r.kind = Kind::SendRecv(Box::new(SendHalf { send: s, _packed: None }));
        Ok(r)
    }

    /// `MPI_Isendrecv_replace`: sends what `data` holds to `dest` and receives into it from
    /// `from`.
    ///
    /// # Safety
    /// `data` must be valid for reads now and for writes until the request completes (or is
    /// dropped).
    pub unsafe fn isendrecv_replace(
        comm: &Comm,
        data: Data,
        dest: Rank,
        send_tag: i32,
        from: From,
        recv_tag: Tag,
    ) -> Result<RawRequest> {
        let mut packed = vec![0u8; data.len()].into_boxed_slice();
        // SAFETY: `data` is readable now (our contract); `packed` is exactly its length.
        unsafe { data.pack(0, &mut packed) };
        // SAFETY: `data` is writable until the returned request completes (our contract).
        let mut r = unsafe { RawRequest::irecv(comm, data, from, recv_tag) }?;
        // SAFETY: `packed` lives in the heap block the request keeps (moving the box does not
        // move it) and is dropped only after the send request (see `SendHalf`).
        let out = unsafe { Data::from_raw(packed.as_mut_ptr(), packed.len()) };
        // SAFETY: `out` is readable until the send completes, as just said.
        let s = unsafe { RawRequest::isend(comm, out, dest, send_tag, Mode::Standard) }?;
        r.kind = Kind::SendRecv(Box::new(SendHalf { send: s, _packed: Some(packed) }));
        Ok(r)
    }
}
