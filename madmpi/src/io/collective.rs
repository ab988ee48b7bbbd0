//! Collective accesses by two-phase I/O (collective buffering, as ROMIO does it).
//!
//! The span every process accesses is split into one contiguous file domain per aggregator (the
//! first process of each node by default; `cb_nodes` more or fewer). In rounds of at most
//! `cb_buffer_size` bytes per aggregator, each process sends the pieces of its ranges that fall
//! in a domain's round window to that domain's aggregator (the descriptors of every round agreed
//! at once by an `alltoall` of counts and an `alltoallv`, then an `alltoallv` of data per
//! round); the aggregator makes large contiguous accesses: one write when
//! the pieces cover their span (vectored, from where they were received), each merged run when
//! they leave holes, a locked read-modify-write when the runs are many; for reads it reads the
//! span and sends the pieces back. A write's rounds are pipelined: round r + 1's data moves
//! while the aggregators write round r's. When no two processes' spans interleave, or a read's
//! pieces are long enough (`romio_cb_*` automatic; see `access::CB_BELOW`), each process
//! accesses its part directly.
//!
//! Runs on the file's own communicator, in the order the file's collective calls were made.

use super::Buffer;
use super::access::{Done, pread_full, pwrite_all, ranges_of, span};
use super::datarep;
use super::hints::Switch;
use super::open::Inner;
use super::view::View;
use crate::comm::Comm;
use crate::error::Result;
use crate::request::Request;
use std::os::fd::AsRawFd;

/// Past this many runs in a round, an aggregator with holes to step over reads the span, fills
/// it and writes it whole.
const RUNS_BEFORE_SIEVING: usize = 16;

/// A write's rounds are at most this long when its domains hold [`PIPELINED_FROM`] bytes: the
/// more rounds, the more of the data moves while the aggregator writes (256 MiB checkerboard, 4
/// processes: 2.5–2.75 GB/s on tmpfs in 4 MiB rounds, 2.25–2.4 in 16 MiB ones; ext4 4.0 against
/// 3.0), but each round costs a few collective calls (a 16 MiB write does better in one round).
const PIPELINED_ROUND: i64 = 4 << 20;
const PIPELINED_FROM: i64 = 16 * PIPELINED_ROUND;

/// One piece of a process's access: its file position, length, and where it lies in the
/// process's stream.
#[derive(Clone, Copy, Debug)]
struct Piece {
    pos: i64,
    len: u64,
    at: u64,
}

/// How the span is divided.
struct Plan {
    aggregators: Vec<u32>,
    lo: i64,
    hi: i64,
    domain: i64,
    rounds: i64,
    round: i64,
}

impl Plan {
    /// The window of aggregator `a` in round `r`.
    fn window(&self, a: usize, r: i64) -> (i64, i64) {
        let d0 = self.lo + a as i64 * self.domain;
        let d1 = (d0 + self.domain).min(self.hi);
        let w0 = d0 + r * self.round;
        (w0.min(d1), (w0 + self.round).min(d1))
    }
}

/// Gathers the spans; `None` when the switch forbids collective buffering, or leaves the choice
/// to us and no two spans interleave, or (reading) the pieces are long enough to be read one by
/// one. Interleaved writes always gather: one process writing a window in order beats several
/// writing pieces into the same file (which the kernel serializes: on 4 processes' 16 KiB
/// pieces, 2.3–2.7 GB/s gathered against 1.7–1.9 directly on tmpfs, 3.0 against 1.0–2.0 on ext4).
fn plan(inner: &Inner, ranges: &[(i64, u64)], switch: Switch, write: bool) -> Result<Option<Plan>> {
    let comm = &inner.comm;
    let (lo, hi) = span(ranges);
    let bytes: u64 = ranges.iter().map(|r| r.1).sum();
    let mut all = vec![0i64; 4 * comm.size() as usize];
    comm.allgather(&[lo, hi, ranges.len() as i64, bytes as i64], &mut all)?;
    let mut spans: Vec<(i64, i64)> = all.chunks(4).map(|s| (s[0], s[1])).filter(|s| s.0 < s.1).collect();
    if spans.is_empty() {
        return Ok(None);
    }
    spans.sort_unstable();
    let interleaved = spans.windows(2).any(|w| w[1].0 < w[0].1);
    let (pieces, total) = all.chunks(4).fold((0u64, 0u64), |(p, b), s| (p + s[2] as u64, b + s[3] as u64));
    // Pieces this long are read one by one at less cost than gathering them.
    let small = total / pieces.max(1) < super::access::CB_BELOW;
    match switch {
        Switch::Disable => return Ok(None),
        Switch::Automatic if !interleaved || (!write && !small) => return Ok(None),
        _ => {}
    }
    let lo = spans[0].0;
    let hi = spans.iter().map(|s| s.1).max().unwrap_or(lo);
    let hints = inner.hints();
    let n = hints.cb_nodes.clamp(1, comm.size() as usize);
    // The first process of each node, then others in rank order, as many as asked.
    let mut aggregators: Vec<u32> = inner.node_leaders.iter().copied().take(n).collect();
    let mut r = 0;
    while aggregators.len() < n {
        if !aggregators.contains(&r) {
            aggregators.push(r);
        }
        r += 1;
    }
    aggregators.sort_unstable();
    let domain = ((hi - lo) as u64).div_ceil(n as u64).max(1) as i64;
    let mut round = (hints.cb_buffer_size as i64).max(1);
    if write && domain >= PIPELINED_FROM {
        round = round.min(PIPELINED_ROUND);
    }
    let rounds = (domain as u64).div_ceil(round as u64) as i64;
    Ok(Some(Plan { aggregators, lo, hi, domain, rounds, round }))
}

/// This process's pieces for each aggregator in round `r` (cut from `ranges`, whose stream
/// starts are `starts`), appended to `out[a]`.
fn pieces_in_round(plan: &Plan, r: i64, ranges: &[(i64, u64)], starts: &[u64], out: &mut [Vec<Piece>]) {
    for (a, o) in out.iter_mut().enumerate() {
        o.clear();
        let (w0, w1) = plan.window(a, r);
        if w0 >= w1 {
            continue;
        }
        // The first range that ends after w0.
        let first = ranges.partition_point(|&(p, l)| p + l as i64 <= w0);
        for (i, &(p, l)) in ranges.iter().enumerate().skip(first) {
            if p >= w1 {
                break;
            }
            let s = p.max(w0);
            let e = (p + l as i64).min(w1);
            if s < e {
                o.push(Piece { pos: s, len: (e - s) as u64, at: starts[i] + (s - p) as u64 });
            }
        }
    }
}

/// A piece an aggregator received: file position, length, sender.
type Received = (i64, u64, usize);

/// One round's exchange, agreed by every process: this process's pieces for each aggregator;
/// on an aggregator the pieces it gets (position, length, sender, in sender order); the data's
/// layout both ways (a write's: a read's data comes back in `read`).
struct Round {
    mine: Vec<Vec<Piece>>,
    pieces: Vec<Received>,
    send_counts: Vec<usize>,
    send_displs: Vec<usize>,
    recv_counts: Vec<usize>,
    /// This process's data for the aggregators, copied in order (`None`: sent from the stream
    /// where it lies, at `send_displs`).
    packed: Option<Vec<u8>>,
}

impl Round {
    /// Every round's requests, agreed at once (as ROMIO does): one `alltoall` of every round's
    /// counts and one `alltoallv` of every descriptor, so that a round then costs only its
    /// data's exchange, one collective call instead of three (on this machine within the noise:
    /// a 256 MiB checkerboard write on tmpfs, pinned, 2.22–2.34 GB/s against 2.16–2.24).
    /// `data`: a write's stream (`None` for a read: no data goes to the aggregators).
    ///
    /// A process's pieces for one aggregator are, for a view (whose file order is its stream
    /// order), consecutive bytes of its stream: they are sent from `data` where they lie.
    fn agree(
        inner: &Inner,
        plan: &Plan,
        ranges: &[(i64, u64)],
        starts: &[u64],
        data: Option<&[u8]>,
    ) -> Result<Vec<Round>> {
        let comm = &inner.comm;
        let size = comm.size() as usize;
        let n = plan.rounds as usize;
        // mine[r][a]: this process's pieces for aggregator a in round r.
        let mine: Vec<Vec<Vec<Piece>>> = (0..plan.rounds)
            .map(|r| {
                let mut m = vec![Vec::new(); plan.aggregators.len()];
                pieces_in_round(plan, r, ranges, starts, &mut m);
                m
            })
            .collect();
        // Per destination: its n rounds' piece counts, then their byte counts.
        let mut counts = vec![0u64; 2 * n * size];
        for (r, m) in mine.iter().enumerate() {
            for (a, pieces) in m.iter().enumerate() {
                let to = plan.aggregators[a] as usize;
                counts[to * 2 * n + r] = pieces.len() as u64;
                counts[to * 2 * n + n + r] =
                    if data.is_some() { pieces.iter().map(|p| p.len).sum() } else { 0 };
            }
        }
        let mut got = vec![0u64; 2 * n * size];
        comm.alltoall(&counts, &mut got)?;
        // Descriptors per destination (aggregators in rank order), round after round.
        let mut desc = Vec::new();
        let mut sd = vec![0usize; size];
        for (a, &to) in plan.aggregators.iter().enumerate() {
            for m in &mine {
                for p in &m[a] {
                    desc.extend_from_slice(&[p.pos, p.len as i64]);
                }
                sd[to as usize] += 2 * m[a].len();
            }
        }
        let from = |s: usize, r: usize| got[s * 2 * n + r] as usize;
        let rd: Vec<usize> = (0..size).map(|s| 2 * (0..n).map(|r| from(s, r)).sum::<usize>()).collect();
        let mut rdesc = vec![0i64; rd.iter().sum()];
        comm.alltoallv(&desc, &sd, &displacements(&sd), &mut rdesc, &rd, &displacements(&rd))?;
        let mut next = displacements(&rd); // each sender's next descriptor
        let mut rounds = Vec::with_capacity(n);
        for (r, m) in mine.into_iter().enumerate() {
            let mut pieces = Vec::new();
            for (s, at) in next.iter_mut().enumerate() {
                let k = 2 * from(s, r);
                pieces.extend(rdesc[*at..*at + k].chunks(2).map(|d| (d[0], d[1] as u64, s)));
                *at += k;
            }
            let recv_counts: Vec<usize> = (0..size).map(|s| got[s * 2 * n + n + r] as usize).collect();
            let mut send_counts = vec![0usize; size];
            if data.is_some() {
                for (a, pieces) in m.iter().enumerate() {
                    send_counts[plan.aggregators[a] as usize] = pieces.iter().map(|p| p.len as usize).sum();
                }
            }
            let (packed, send_displs) = send_layout(plan, &m, data, &send_counts);
            rounds.push(Round { mine: m, pieces, send_counts, send_displs, recv_counts, packed });
        }
        Ok(rounds)
    }

    /// Starts moving the round's data (`data`: the stream) into `into` (resized to what this
    /// process receives, in sender order).
    fn start<'a>(&'a self, comm: &Comm, data: &'a [u8], into: &'a mut Vec<u8>) -> Result<Request<'a>> {
        into.resize(self.recv_counts.iter().sum(), 0);
        let send = self.packed.as_deref().unwrap_or(data);
        let rdispls = displacements(&self.recv_counts);
        comm.ialltoallv(send, &self.send_counts, &self.send_displs, into, &self.recv_counts, &rdispls)
    }
}

/// Where a round's data for the aggregators is sent from: the stream itself where each
/// aggregator's pieces lie end to end in it (displacements into `data`), else a copy of them in
/// order (`send_counts` per rank).
fn send_layout(
    plan: &Plan,
    mine: &[Vec<Piece>],
    data: Option<&[u8]>,
    send_counts: &[usize],
) -> (Option<Vec<u8>>, Vec<usize>) {
    let consecutive = mine.iter().all(|ps| ps.windows(2).all(|w| w[0].at + w[0].len == w[1].at));
    match data {
        Some(d) if !consecutive => {
            let mut bytes = Vec::with_capacity(send_counts.iter().sum());
            for p in mine.iter().flatten() {
                bytes.extend_from_slice(&d[p.at as usize..(p.at + p.len) as usize]);
            }
            (Some(bytes), displacements(send_counts))
        }
        _ => {
            let mut at = vec![0usize; send_counts.len()];
            for (a, pieces) in mine.iter().enumerate() {
                at[plan.aggregators[a] as usize] = pieces.first().map_or(0, |p| p.at as usize);
            }
            (None, at)
        }
    }
}

/// Where each block of `counts` starts when they are laid end to end.
fn displacements(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0usize, |acc, &n| {
            let d = *acc;
            *acc += n;
            Some(d)
        })
        .collect()
}

/// The stream starts of `ranges`.
fn starts_of(ranges: &[(i64, u64)]) -> Vec<u64> {
    ranges
        .iter()
        .scan(0u64, |acc, &(_, l)| {
            let s = *acc;
            *acc += l;
            Some(s)
        })
        .collect()
}

/// A collective write (see the module docs).
///
/// # Safety
/// `buf` is readable during the call.
pub(super) unsafe fn write(inner: &Inner, view: &View, start: u64, buf: &Buffer) -> Result<Done> {
    // SAFETY: the caller vouches for the buffer for the call.
    let data = unsafe { datarep::stream_of(&view.datarep, buf) }?;
    let data: &[u8] = &data;
    let ranges = ranges_of(view, start, data.len() as u64);
    let done = Done { stream: data.len() as u64, memory: buf.datatype.size() * buf.count };
    let Some(plan) = plan(inner, &ranges, inner.hints().cb_write, true)? else {
        // SAFETY: passed on.
        return unsafe { inner.write_independent(view, start, buf) };
    };
    let starts = starts_of(&ranges);
    let aggregator = plan.aggregators.contains(&inner.comm.rank());
    let rounds = Round::agree(inner, &plan, &ranges, &starts, Some(data))?;
    // Round r + 1's data moves (its senders copy) while the aggregators write round r's.
    let (mut current, mut next) = (Vec::new(), Vec::new());
    rounds[0].start(&inner.comm, data, &mut current)?.wait()?;
    // The first failure to write; the rounds go on (the others' exchanges need this process)
    // and every process learns of it at the end.
    let mut written = Ok(());
    for (r, round) in rounds.iter().enumerate() {
        let moving = rounds.get(r + 1).map(|u| u.start(&inner.comm, data, &mut next)).transpose()?;
        if aggregator && written.is_ok() && !round.pieces.is_empty() {
            written = write_round(inner, &round.pieces, &current);
        }
        if let Some(m) = moving {
            m.wait()?;
        }
        std::mem::swap(&mut current, &mut next);
    }
    super::open::agree(&inner.comm, written)?;
    Ok(done)
}

/// An aggregator's writes of one round: `pieces` (in sender order) with their `bytes`.
fn write_round(inner: &Inner, pieces: &[Received], bytes: &[u8]) -> Result<()> {
    let mut order: Vec<(i64, u64, usize)> = Vec::with_capacity(pieces.len());
    let mut at = 0usize;
    for &(pos, len, _) in pieces {
        order.push((pos, len, at));
        at += len as usize;
    }
    order.sort_by_key(|p| p.0);
    // Runs of adjacent or overlapping pieces.
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for &(pos, len, _) in &order {
        let end = pos + len as i64;
        match runs.last_mut() {
            Some(r) if pos <= r.1 => r.1 = r.1.max(end),
            _ => runs.push((pos, end)),
        }
    }
    let (lo, hi) = (runs[0].0, runs[runs.len() - 1].1);
    let sieve = runs.len() > RUNS_BEFORE_SIEVING;
    let mut window = vec![0u8; if sieve { (hi - lo) as usize } else { 0 }];
    let _locked;
    if sieve {
        // The holes belong to other writers, or to nobody: read them, write them back unchanged.
        let local = inner.local.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        _locked = (super::lock::lock(inner.fd(), lo, hi - lo, true)?, local);
        pread_full(inner, lo, &mut window)?;
        for &(pos, len, at) in &order {
            let o = (pos - lo) as usize;
            window[o..o + len as usize].copy_from_slice(&bytes[at..at + len as usize]);
        }
        return pwrite_all(inner, lo, &window);
    }
    let overlapping = order.windows(2).any(|w| w[1].0 < w[0].0 + w[0].1 as i64);
    if !overlapping {
        // Each run straight from where its pieces were received, in a few vectored writes.
        let slices: Vec<&[u8]> = order.iter().map(|&(_, len, at)| &bytes[at..at + len as usize]).collect();
        let mut first = 0;
        for (r0, r1) in runs {
            let n = order[first..].iter().take_while(|p| p.0 < r1).count();
            pwritev_all(inner, r0, &slices[first..first + n])?;
            first += n;
        }
        return Ok(());
    }
    // Pieces overlap (an erroneous program's, or a view's that repeats bytes): later senders'
    // bytes win, as the copies in sender order below make them.
    let mut senders = order;
    senders.sort_by_key(|p| p.2);
    for (r0, r1) in runs {
        let mut run = vec![0u8; (r1 - r0) as usize];
        for &(pos, len, at) in senders.iter().filter(|p| p.0 >= r0 && p.0 < r1) {
            let o = (pos - r0) as usize;
            run[o..o + len as usize].copy_from_slice(&bytes[at..at + len as usize]);
        }
        pwrite_all(inner, r0, &run)?;
    }
    Ok(())
}

/// Writes `slices` one after another from file position `pos`, in vectored writes of at most
/// `IOV_MAX` slices, until every byte is written.
fn pwritev_all(inner: &Inner, mut pos: i64, slices: &[&[u8]]) -> Result<()> {
    const IOV_MAX: usize = 1024;
    let mut iov: Vec<libc::iovec> = slices
        .iter()
        .map(|s| libc::iovec { iov_base: s.as_ptr().cast_mut().cast(), iov_len: s.len() })
        .collect();
    let mut next = 0;
    while next < iov.len() {
        let n = (iov.len() - next).min(IOV_MAX);
        // SAFETY: the iovecs point into `slices`, borrowed (alive, unchanged) for this call; the
        // kernel only reads through them; `n` of them from `next` exist.
        let wrote = unsafe { libc::pwritev(inner.fd().as_raw_fd(), iov[next..].as_ptr(), n as i32, pos) };
        if wrote < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(super::open::os_error("write", &inner.path, e));
        }
        pos += wrote as i64;
        // Past the slices written whole, into the one written in part.
        let mut left = wrote as usize;
        while next < iov.len() && left >= iov[next].iov_len {
            left -= iov[next].iov_len;
            next += 1;
        }
        if left > 0 {
            let v = &mut iov[next];
            v.iov_base = v.iov_base.cast::<u8>().wrapping_add(left).cast();
            v.iov_len -= left;
        }
    }
    Ok(())
}

/// A collective read (see the module docs).
///
/// # Safety
/// `buf` is writable during the call.
pub(super) unsafe fn read(inner: &Inner, view: &View, start: u64, buf: &Buffer) -> Result<Done> {
    let per = view.datarep.stream_size(&buf.datatype)?;
    let len = per * buf.count;
    let ranges = ranges_of(view, start, len);
    let Some(plan) = plan(inner, &ranges, inner.hints().cb_read, false)? else {
        // SAFETY: passed on.
        return unsafe { inner.read_independent(view, start, buf) };
    };
    let starts = starts_of(&ranges);
    let mut stream = vec![0u8; len as usize];
    let contiguous = datarep::contiguous(&view.datarep, buf);
    let out: &mut [u8] = match contiguous {
        // SAFETY: the caller vouches for the buffer: writable, `n` bytes from `p`.
        Some((p, n)) => unsafe { std::slice::from_raw_parts_mut(p, n) },
        None => &mut stream,
    };
    let comm = &inner.comm;
    let size = comm.size() as usize;
    for round in Round::agree(inner, &plan, &ranges, &starts, None)? {
        let Round { mine, pieces, .. } = round;
        // The aggregator reads the span of what was asked and answers each sender in order.
        let mut answer = Vec::new();
        let mut sends = vec![0usize; size];
        if !pieces.is_empty() {
            let lo = pieces.iter().map(|p| p.0).min().unwrap_or(0);
            let hi = pieces.iter().map(|p| p.0 + p.1 as i64).max().unwrap_or(lo);
            let mut window = vec![0u8; (hi - lo) as usize];
            pread_full(inner, lo, &mut window)?;
            for &(pos, l, from) in &pieces {
                let o = (pos - lo) as usize;
                answer.extend_from_slice(&window[o..o + l as usize]);
                sends[from] += l as usize;
            }
        }
        let mut recvs = vec![0usize; size];
        for (a, ps) in mine.iter().enumerate() {
            recvs[plan.aggregators[a] as usize] = ps.iter().map(|p| p.len as usize).sum();
        }
        let displs = displacements;
        let mut back = vec![0u8; recvs.iter().sum()];
        comm.alltoallv(&answer, &sends, &displs(&sends), &mut back, &recvs, &displs(&recvs))?;
        let rdispls = displs(&recvs);
        for (a, ps) in mine.iter().enumerate() {
            let mut at = rdispls[plan.aggregators[a] as usize];
            for p in ps {
                out[p.at as usize..(p.at + p.len) as usize].copy_from_slice(&back[at..at + p.len as usize]);
                at += p.len as usize;
            }
        }
    }
    // What lies before the end of the file was read.
    let end = inner.size()?;
    let mut got = 0u64;
    for &(p, l) in &ranges {
        let avail = (end - p).clamp(0, l as i64) as u64;
        got += avail;
        if avail < l {
            break;
        }
    }
    if contiguous.is_some() {
        return Ok(Done { stream: got, memory: got });
    }
    // SAFETY: the caller vouches for the buffer.
    let memory = unsafe { view.datarep.decode(&stream[..got as usize], buf) }?;
    Ok(Done { stream: got, memory })
}
