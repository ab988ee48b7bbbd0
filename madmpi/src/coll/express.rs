//! Blocking barrier, broadcast and allreduce of a few bytes, run without a schedule: the
//! calling thread sends and receives exactly the messages the flat schedule would (same peers,
//! collective number, steps and bytes — dissemination, binomial tree, recursive doubling), so a
//! rank that runs the schedule for the same call matches them. nmad's latency path takes the
//! sends when it can. What this saves is the plan lookup, the bound schedule and its round
//! bookkeeping: more than half of a 2-rank 8-byte allreduce's instructions.
//!
//! Each call declines (`None`, nothing done, no collective number taken) unless the schedule
//! would be the flat algorithm it replays: an intracommunicator with no node hierarchy, no
//! algorithm forced otherwise, no choice trace asked for, a contiguous payload of at most
//! [`MAX_BYTES`]. The general path then runs, and reports every argument error.
//!
//! Owns these replays; it must not choose algorithms (`choice` does: a replay runs only where
//! `choice` would pick its algorithm).

use super::choice::{self, Allreduce, Bcast, Forced};
use super::raw::Mem;
use super::schedule::lowbit;
use crate::comm::tags::{self, Kind};
use crate::comm::{Comm, from_nmad};
use crate::datatype::Datatype;
use crate::error::{Error, ErrorClass, Result};
use crate::op::Op;
use nmad::{Data, SendMode, Source, TagMatch};

/// The largest payload replayed (a broadcast buffer, an allreduce vector).
pub const MAX_BYTES: usize = 256;

impl Comm {
    /// The communicator's size if its collectives run flat, with nothing forced but what
    /// `allowed` accepts and no trace: when a replay may run.
    fn express_site(&self, allowed: impl FnOnce(&Forced, u32) -> bool) -> Option<u32> {
        if self.is_inter() || choice::tracing() {
            return None;
        }
        let f = Forced::from_env().ok()?;
        let site = self.coll_site(&f).ok()?;
        (site.layout.is_none() && allowed(&f, site.n)).then_some(site.n)
    }

    /// `MPI_Barrier` by the dissemination schedule's messages; `None`: declined.
    pub fn barrier_now(&self) -> Option<Result<()>> {
        if let Some(done) = self.shared_barrier() {
            return Some(done);
        }
        let n = self.express_site(|_, _| true)?;
        let (seq, me) = (self.next_coll_seq(), self.rank());
        let (mut dist, mut step) = (1u32, 0u32);
        while dist < n {
            let tag = tags::internal(Kind::Collective, seq, step);
            if let Err(e) = self.exchange((me + dist) % n, (me + n - dist) % n, tag, &[], &mut []) {
                return Some(Err(e));
            }
            dist *= 2;
            step += 1;
        }
        Some(Ok(()))
    }

    /// `MPI_Bcast` of `len` bytes at `buf` from `root` by the binomial tree's messages; `None`:
    /// declined.
    ///
    /// # Safety
    /// `buf` holds `len` bytes, readable at the root and writable elsewhere, untouched by others
    /// during the call.
    pub unsafe fn bcast_now(&self, buf: *mut u8, len: usize, root: u32) -> Option<Result<()>> {
        if buf.is_null() && len > 0 {
            return None;
        }
        // SAFETY: our contract.
        if let Some(done) = unsafe { self.shared_bcast(&Mem::Contiguous((buf, len)), root) } {
            return Some(done);
        }
        if len > MAX_BYTES {
            return None;
        }
        let n = self.express_site(|f, n| root < n && choice::bcast(f.bcast, n, len) == Bcast::Binomial)?;
        let seq = self.next_coll_seq();
        if n == 1 || len == 0 {
            return Some(Ok(()));
        }
        // SAFETY: `len` bytes at `buf`, not null, ours for the call (our contract).
        let bytes = unsafe { std::slice::from_raw_parts_mut(buf, len) };
        let real = |vr: u32| (vr + root) % n;
        let vr = (self.rank() + n - root) % n;
        let tag = tags::internal(Kind::Collective, seq, 0);
        if vr != 0
            && let Err(e) = self.recv_exact(real(vr - lowbit(vr)), tag, bytes)
        {
            return Some(Err(e));
        }
        let top = if vr == 0 { n.next_power_of_two() } else { lowbit(vr) };
        let mut m = top >> 1;
        while m > 0 {
            if vr + m < n
                && let Err(e) = self.send_to(real(vr + m), tag, bytes)
            {
                return Some(Err(e));
            }
            m >>= 1;
        }
        Some(Ok(()))
    }

    /// `MPI_Allreduce` of `count` elements of `dtype` (contiguous: its bytes are its packed
    /// bytes) from `send` (`None`: in place) into `recv` by recursive doubling's messages, on a
    /// power-of-two number of ranks; `None`: declined.
    ///
    /// # Safety
    /// `send` (if given) is readable and `recv` writable for `count` elements, the two not
    /// overlapping, untouched by others during the call.
    pub unsafe fn allreduce_now(
        &self,
        send: Option<*const u8>,
        recv: *mut u8,
        count: usize,
        dtype: &Datatype,
        op: &Op,
    ) -> Option<Result<()>> {
        let len = contiguous_len(count, dtype)?;
        if recv.is_null() && len > 0 || send.is_some_and(|s| s.is_null() && len > 0) {
            return None;
        }
        let (inp, out) = (send.map(|s| Mem::Contiguous((s.cast_mut(), len))), Mem::Contiguous((recv, len)));
        // SAFETY: our contract (the operation is checked there).
        if let Some(done) = unsafe { self.shared_reduce(inp.as_ref(), Some(&out), None, count, (op, dtype)) }
        {
            return Some(done);
        }
        if len > MAX_BYTES || op.check(dtype).is_err() {
            return None;
        }
        let commutative = op.reorderable();
        let n = self.express_site(|f, n| {
            n.is_power_of_two()
                && choice::allreduce(f.allreduce, n, count, len, commutative) == Allreduce::RecursiveDoubling
        })?;
        let seq = self.next_coll_seq();
        if len == 0 {
            return Some(Ok(()));
        }
        // SAFETY: `len` writable bytes at `recv`, not null (our contract).
        let acc = unsafe { std::slice::from_raw_parts_mut(recv, len) };
        if let Some(s) = send {
            // SAFETY: `len` readable bytes at `s`, apart from `recv` (our contract).
            acc.copy_from_slice(unsafe { std::slice::from_raw_parts(s, len) });
        }
        let mut tmp = [0u8; MAX_BYTES];
        let tmp = &mut tmp[..len];
        let me = self.rank();
        let (mut mask, mut step) = (1u32, 1u32);
        while mask < n {
            let peer = me ^ mask;
            let tag = tags::internal(Kind::Collective, seq, step);
            let combined = self.exchange(peer, peer, tag, acc, tmp).and_then(|()| {
                // In rank order: the lower rank's operand first.
                if peer < me || commutative {
                    op.reduce(tmp, acc, count, dtype)
                } else {
                    op.reduce(acc, tmp, count, dtype).map(|()| acc.copy_from_slice(tmp))
                }
            });
            if let Err(e) = combined {
                return Some(Err(e));
            }
            mask <<= 1;
            step += 1;
        }
        Some(Ok(()))
    }

    /// `MPI_Reduce` of `count` elements of `dtype` (contiguous) from `send` (`None`: in place,
    /// at the root) into `recv` at `root`, node-locally only; `None`: declined (the general
    /// path runs it, and reports every argument error).
    ///
    /// # Safety
    /// `send` (if given) is readable for `count` elements, `recv` at the root writable (and
    /// readable in place), the two not overlapping, untouched by others during the call.
    pub unsafe fn reduce_now(
        &self,
        send: Option<*const u8>,
        recv: *mut u8,
        count: usize,
        dtype: &Datatype,
        op: &Op,
        root: u32,
    ) -> Option<Result<()>> {
        let len = contiguous_len(count, dtype)?;
        let at_root = self.rank() == root;
        if send.is_some_and(|s| s.is_null() && len > 0) || at_root && recv.is_null() && len > 0 {
            return None;
        }
        let input = send.map(|s| Mem::Contiguous((s.cast_mut(), len)));
        let output = at_root.then_some(Mem::Contiguous((recv, len)));
        // SAFETY: our contract (the operation is checked there).
        unsafe { self.shared_reduce(input.as_ref(), output.as_ref(), Some(root), count, (op, dtype)) }
    }

    /// Sends `out` to rank `to` with `tag` while receiving exactly `inp.len()` bytes from
    /// rank `from` with the same tag (one round of a schedule).
    fn exchange(&self, to: u32, from: u32, tag: u64, out: &[u8], inp: &mut [u8]) -> Result<()> {
        let req = std::pin::pin!(nmad::Request::new());
        // SAFETY: `out` outlives the request: it is waited for below (and, on an early
        // return, by its drop).
        let pending = unsafe { self.post_send(to, tag, out, req.as_ref()) }?;
        let received = self.recv_exact(from, tag, inp);
        if pending {
            sent(&req)?;
        }
        received
    }

    /// Sends `out` to rank `to` with `tag` and waits until it left.
    pub(super) fn send_to(&self, to: u32, tag: u64, out: &[u8]) -> Result<()> {
        let req = std::pin::pin!(nmad::Request::new());
        // SAFETY: `out` outlives the request, waited for here.
        if unsafe { self.post_send(to, tag, out, req.as_ref()) }? {
            sent(&req)?;
        }
        Ok(())
    }

    /// Sends `out` now if nmad's latency path takes it (`false`), else starts it on `req`
    /// (`true`: wait for it).
    ///
    /// # Safety
    /// `out` stays valid until `req` completes; `req` stays pinned until then.
    unsafe fn post_send(
        &self,
        to: u32,
        tag: u64,
        out: &[u8],
        req: std::pin::Pin<&nmad::Request>,
    ) -> Result<bool> {
        let s = self.session();
        let w = self.express_world(to)?;
        if s.send_now(w, tag, out) {
            return Ok(false);
        }
        // SAFETY: our contract.
        let d = unsafe { Data::from_raw(out.as_ptr().cast_mut(), out.len()) };
        // SAFETY: our contract.
        unsafe { s.isend(w, tag, d, SendMode::default(), req) }.map_err(from_nmad)?;
        Ok(true)
    }

    /// Receives exactly `inp.len()` bytes from rank `from` with `tag`.
    pub(super) fn recv_exact(&self, from: u32, tag: u64, inp: &mut [u8]) -> Result<()> {
        let from_w = self.express_world(from)?;
        let st = self.session().recv(Source::Rank(from_w), TagMatch::exact(tag), inp).map_err(from_nmad)?;
        if st.len != inp.len() as u64 {
            return Err(Error::new(
                ErrorClass::Truncate,
                format!("collective: {} bytes from rank {from} where {} were expected", st.len, inp.len()),
            ));
        }
        Ok(())
    }

    fn express_world(&self, r: u32) -> Result<u32> {
        self.coll_world_rank(r).ok_or_else(|| Error::intern(format!("collective: no rank {r}")))
    }
}

/// The bytes of `count` elements of `dtype` if they are its packed bytes (a contiguous type
/// starting at its address).
fn contiguous_len(count: usize, dtype: &Datatype) -> Option<usize> {
    if dtype.contiguous_offset() != Some(0) {
        return None;
    }
    count.checked_mul(usize::try_from(dtype.size()).ok()?)
}

/// Waits for the send started on `req`: its error, if it failed.
fn sent(req: &nmad::Request) -> Result<()> {
    req.wait();
    match req.result() {
        Some(Err(e)) => Err(from_nmad(e)),
        _ => Ok(()),
    }
}
