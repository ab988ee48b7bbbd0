//! The single-producer/single-consumer ring that carries one direction of a shared-memory link:
//! its layout, how a record is published, how it is read back and validated, and the two flags
//! of the sleep/wake protocol.
//!
//! It owns the ring protocol only: no allocation, no blocking, no links, sinks or sockets. Memory
//! is reached through [`RingMem`], so the same code runs on a shared mapping and, under loom, on
//! a model of it.
//!
//! Positions are absolute byte counts since the ring was created (`pos % cap` is the offset in
//! the data area). Layout:
//! - control block, one 128-byte block each (no false sharing, even with adjacent-line
//!   prefetch): `head` (bytes the consumer released), `sleeping` (the consumer may sleep: the
//!   producer must signal it after publishing — every record, or only urgent ones: [`Sleep`]),
//!   `waiting` (the producer may sleep until the consumer frees space);
//! - data area: records, each starting on a 64-byte slot: `stamp` (= pos + 1, stored last with
//!   Release), `meta` (kind << 32 | length), for bulk pieces `cookie` and `offset`, then the
//!   payload, which may wrap around the end of the area.
//!
//! A consumer learns of a record by reading one word, the stamp at its head (one cache line for a
//! small packet). The producer keeps the stamp word of every slot between its tail and the end of
//! the free space zeroed before it publishes anything that leads the consumer there, so an honest
//! producer leaves exactly 0 or pos + 1 at the head. It zeroes a few slots ahead, so the next
//! header is rarely zeroed on the critical path. The peer is not trusted: any other stamp, an
//! unknown kind or a length out of bounds is [`Malformed`], and every header word is read once.

use crate::loom::atomic::{Ordering, fence};

/// Records start on slot boundaries.
pub(crate) const SLOT: u64 = 64;
/// Bytes before the data area.
pub(crate) const CTRL_BYTES: u64 = 384;
/// Header bytes before a packet's payload.
pub(crate) const PACKET_HEADER: u64 = 16;
/// Header bytes before a bulk piece's payload.
pub(crate) const BULK_HEADER: u64 = 32;
/// The largest payload of one record.
pub(crate) const MAX_PAYLOAD: u64 = 64 << 10;
/// The largest record (a full bulk piece).
pub(crate) const MAX_RECORD: u64 = record_size(BULK_HEADER, MAX_PAYLOAD);
/// How far beyond the tail the producer keeps slot stamps zeroed.
const ZERO_AHEAD: u64 = 4 * SLOT;

pub(crate) const KIND_PACKET: u64 = 1;
pub(crate) const KIND_BULK: u64 = 2;

/// A word of a ring: in the control block, or at a position of the data area (8-byte aligned).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Word {
    Head,
    Sleeping,
    Waiting,
    Data(u64),
}

impl Word {
    /// Offset in the ring (control block first, then the data area), for a data area of `cap`.
    pub(crate) fn offset(self, cap: u64) -> u64 {
        match self {
            Word::Head => 0,
            Word::Sleeping => 128,
            Word::Waiting => 256,
            Word::Data(pos) => {
                debug_assert_eq!(pos % 8, 0);
                CTRL_BYTES + (pos & (cap - 1))
            }
        }
    }
}

/// The memory of one ring.
pub(crate) trait RingMem {
    /// Bytes in the data area: a power of two, a multiple of [`SLOT`].
    fn cap(&self) -> u64;
    fn load(&self, w: Word, o: Ordering) -> u64;
    fn store(&self, w: Word, v: u64, o: Ordering);
    /// Copies `src` into the data area from position `pos` on (wrapping around).
    fn write(&self, pos: u64, src: &[u8]);
    /// Copies the data area from position `pos` on (wrapping around) into `dst`.
    fn read(&self, pos: u64, dst: &mut [u8]);
}

/// Bytes a record takes in the ring.
pub(crate) const fn record_size(header: u64, len: u64) -> u64 {
    (header + len).div_ceil(SLOT) * SLOT
}

/// What a record carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    Packet,
    Bulk { cookie: u64, offset: u64 },
}

impl Body {
    fn header(self) -> u64 {
        match self {
            Body::Packet => PACKET_HEADER,
            Body::Bulk { .. } => BULK_HEADER,
        }
    }
}

/// A validated record at the consumer's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub body: Body,
    pub len: u64,
    /// Position of the payload.
    pub payload: u64,
    /// Position of the next record.
    pub end: u64,
}

/// The peer wrote something an honest producer or consumer never writes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed(pub String);

/// The producer's side of a ring (its state lives in private memory).
#[derive(Debug)]
pub(crate) struct Producer {
    tail: u64,
    /// The consumer's index as last read (re-read only when space seems short).
    head: u64,
    /// Slots from the tail up to here have a zero stamp.
    zeroed: u64,
    cap: u64,
}

impl Producer {
    /// For a fresh (all-zero) ring of `cap` data bytes.
    pub(crate) fn new(cap: u64) -> Producer {
        debug_assert!(cap.is_power_of_two() && cap >= 2 * SLOT);
        Producer { tail: 0, head: 0, zeroed: cap, cap }
    }

    /// The consumer's index as last read.
    pub(crate) fn seen_head(&self) -> u64 {
        self.head
    }

    /// Where a record of `size` bytes goes, if it fits while leaving `keep` more bytes free (and
    /// the slot after it, whose stamp must be zeroed). Re-reads the consumer's index only when
    /// the cached one says the record does not fit.
    pub(crate) fn reserve(
        &mut self,
        m: &impl RingMem,
        size: u64,
        keep: u64,
    ) -> Result<Option<u64>, Malformed> {
        let need = self.tail + size + SLOT + keep;
        if need > self.head + self.cap {
            let head = m.load(Word::Head, Ordering::Acquire);
            if head < self.head || head > self.tail || !head.is_multiple_of(SLOT) {
                return Err(Malformed(format!(
                    "the consumer index {head} is outside [{}, {}] or unaligned",
                    self.head, self.tail
                )));
            }
            self.head = head;
            if need > self.head + self.cap {
                return Ok(None);
            }
        }
        Ok(Some(self.tail))
    }

    /// Publishes the record the caller wrote at the reserved position: `body`'s header words,
    /// `len` payload bytes (already written after the header). Its stamp is stored last.
    pub(crate) fn publish(&mut self, m: &impl RingMem, body: Body, len: u64) {
        let pos = self.tail;
        let kind = match body {
            Body::Packet => KIND_PACKET,
            Body::Bulk { cookie, offset } => {
                m.store(Word::Data(pos + 16), cookie, Ordering::Relaxed);
                m.store(Word::Data(pos + 24), offset, Ordering::Relaxed);
                KIND_BULK
            }
        };
        m.store(Word::Data(pos + 8), kind << 32 | len, Ordering::Relaxed);
        let end = pos + record_size(body.header(), len);
        // The next header must read zero before this stamp leads the consumer there (reserve
        // kept `end` within the free space). Usually an earlier publish zeroed it already; slots
        // inside this record are payload and are skipped.
        if self.zeroed <= end {
            m.store(Word::Data(end), 0, Ordering::Relaxed);
            self.zeroed = end + SLOT;
        }
        m.store(Word::Data(pos), pos + 1, Ordering::Release);
        self.tail = end;
        // Zero a few slots further only now: on x86 stores become visible in order, so a zero
        // stored before the stamp would make the stamp wait for that line. Later stamps are
        // stored after these zeros, which is all they need.
        let limit = (end + ZERO_AHEAD).min(self.head + self.cap - SLOT);
        while self.zeroed <= limit {
            m.store(Word::Data(self.zeroed), 0, Ordering::Relaxed);
            self.zeroed += SLOT;
        }
    }
}

/// The record at `head`, if one was published there.
pub(crate) fn peek(m: &impl RingMem, head: u64) -> Result<Option<Record>, Malformed> {
    let stamp = m.load(Word::Data(head), Ordering::Acquire);
    if stamp == 0 {
        return Ok(None);
    }
    if stamp != head + 1 {
        return Err(Malformed(format!("stamp {stamp:#x} at position {head:#x} (expected {:#x})", head + 1)));
    }
    let meta = m.load(Word::Data(head + 8), Ordering::Relaxed);
    let (kind, len) = (meta >> 32, meta & 0xffff_ffff);
    let body = match kind {
        KIND_PACKET => Body::Packet,
        KIND_BULK => {
            let cookie = m.load(Word::Data(head + 16), Ordering::Relaxed);
            let offset = m.load(Word::Data(head + 24), Ordering::Relaxed);
            Body::Bulk { cookie, offset }
        }
        _ => return Err(Malformed(format!("unknown record kind {kind} at position {head:#x}"))),
    };
    let size = record_size(body.header(), len);
    if len > MAX_PAYLOAD || size > m.cap() - SLOT {
        return Err(Malformed(format!("record of {len} bytes at position {head:#x} is too long")));
    }
    Ok(Some(Record { body, len, payload: head + body.header(), end: head + size }))
}

/// The consumer is done with everything before `end`: the producer may reuse it. Release: the
/// consumer's reads of those bytes happen before the producer (which reads `head` with Acquire)
/// overwrites them.
pub(crate) fn release(m: &impl RingMem, end: u64) {
    m.store(Word::Head, end, Ordering::Release);
}

/// The consumer's released index (what the producer would see now).
pub(crate) fn released(m: &impl RingMem) -> u64 {
    m.load(Word::Head, Ordering::Relaxed)
}

/// How the consumer sleeps (the `sleeping` word), in increasing order of what wakes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Sleep {
    Awake = 0,
    /// Only for records someone waits for (a progression thread while its application
    /// computes: plain eager data can wait for the application's next call or the next tick).
    Urgent = 1,
    /// For every record (a thread waiting in the library).
    Any = 2,
}

impl Sleep {
    fn of(word: u64) -> Sleep {
        match word {
            0 => Sleep::Awake,
            1 => Sleep::Urgent,
            _ => Sleep::Any, // a foreign value: the safe reading
        }
    }

    /// Whether a sleeper of this kind must be signalled for a record (`urgent` or not).
    pub(crate) fn wants(self, urgent: bool) -> bool {
        match self {
            Sleep::Awake => false,
            Sleep::Urgent => urgent,
            Sleep::Any => true,
        }
    }
}

/// Consumer side of the wake protocol: announce (or withdraw, with [`Sleep::Awake`]) that it
/// may sleep. The caller issues a SeqCst fence before checking [`has_record`].
pub(crate) fn set_sleeping(m: &impl RingMem, how: Sleep) {
    set_word(m, Word::Sleeping, how as u64);
}

/// Stores a control word only if it changes: the peer reads it on every publish (or release),
/// so a needless store would cost it a cache miss.
fn set_word(m: &impl RingMem, w: Word, v: u64) {
    if m.load(w, Ordering::Relaxed) != v {
        m.store(w, v, Ordering::Relaxed);
    }
}

/// Whether something (valid or not) was published at `head`; after the caller's SeqCst fence.
pub(crate) fn has_record(m: &impl RingMem, head: u64) -> bool {
    m.load(Word::Data(head), Ordering::Relaxed) != 0
}

/// Producer side, after publishing: how the consumer sleeps ([`Sleep::wants`] says whether
/// to signal it).
pub(crate) fn consumer_sleeping(m: &impl RingMem) -> Sleep {
    fence(Ordering::SeqCst);
    Sleep::of(m.load(Word::Sleeping, Ordering::Relaxed))
}

/// Producer side of the space protocol: announce (or withdraw) that it may sleep until the
/// consumer frees space. The caller fences (SeqCst) before re-reading the consumer's index.
pub(crate) fn set_waiting(m: &impl RingMem, on: bool) {
    set_word(m, Word::Waiting, u64::from(on));
}

/// Consumer side: whether releasing up to `head` calls for a look at the producer's `waiting`
/// flag, the last look having been at `checked`. Looking (a SeqCst fence) after every release
/// would put a fence on every receive; a quarter of the ring suffices. After a look at
/// `checked` that saw no flag, a producer that raises its flag and fences reads a head of at
/// least `checked`; to be stuck it must then have more than `3/4 cap - MAX_RECORD - SLOT`
/// bytes (bulk keeps at most `cap/4` free for packets) published beyond it. The consumer reads
/// them all, so it passes `checked + cap/4` and looks again; no look is missed as long as
/// `cap/2 >= MAX_RECORD + SLOT`.
pub(crate) fn space_check_due(m: &impl RingMem, head: u64, checked: u64) -> bool {
    head - checked >= m.cap() / 4
}

/// Consumer side, after releasing space: whether the producer must be signalled.
pub(crate) fn producer_waiting(m: &impl RingMem) -> bool {
    fence(Ordering::SeqCst);
    m.load(Word::Waiting, Ordering::Relaxed) != 0
}

/// A ring in ordinary memory, for unit and loom tests (the payload is copied word by word with
/// relaxed atomics, so that loom sees every access and a missing Release/Acquire shows up as
/// stale bytes).
#[cfg(test)]
pub(crate) mod test_mem {
    use super::{CTRL_BYTES, RingMem, Word};
    use crate::loom::atomic::{AtomicU64, Ordering};

    pub(crate) struct TestMem {
        cap: u64,
        words: Vec<AtomicU64>,
    }

    impl TestMem {
        pub(crate) fn new(cap: u64) -> TestMem {
            let n = ((CTRL_BYTES + cap) / 8) as usize;
            TestMem { cap, words: (0..n).map(|_| AtomicU64::new(0)).collect() }
        }

        fn at(&self, w: Word) -> &AtomicU64 {
            &self.words[(w.offset(self.cap) / 8) as usize]
        }

        /// Calls `f(position, byte index in its word, index in the buffer, bytes)` for each word
        /// the range touches.
        fn each_word(&self, pos: u64, len: usize, mut f: impl FnMut(u64, usize, usize, usize)) {
            let mut done = 0;
            while done < len {
                let p = pos + done as u64;
                let (word, shift) = (p & !7, (p % 8) as usize);
                let n = (8 - shift).min(len - done);
                f(word, shift, done, n);
                done += n;
            }
        }
    }

    impl RingMem for TestMem {
        fn cap(&self) -> u64 {
            self.cap
        }
        fn load(&self, w: Word, o: Ordering) -> u64 {
            self.at(w).load(o)
        }
        fn store(&self, w: Word, v: u64, o: Ordering) {
            self.at(w).store(v, o)
        }
        fn write(&self, pos: u64, src: &[u8]) {
            self.each_word(pos, src.len(), |word, shift, i, n| {
                let a = self.at(Word::Data(word));
                let mut b = a.load(Ordering::Relaxed).to_le_bytes();
                b[shift..shift + n].copy_from_slice(&src[i..i + n]);
                a.store(u64::from_le_bytes(b), Ordering::Relaxed);
            });
        }
        fn read(&self, pos: u64, dst: &mut [u8]) {
            self.each_word(pos, dst.len(), |word, shift, i, n| {
                let b = self.at(Word::Data(word)).load(Ordering::Relaxed).to_le_bytes();
                dst[i..i + n].copy_from_slice(&b[shift..shift + n]);
            });
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::test_mem::TestMem;
    use super::*;

    fn pattern(seed: u64, len: usize) -> Vec<u8> {
        (0..len).map(|i| (seed as usize * 31 + i * 7) as u8).collect()
    }

    fn send(p: &mut Producer, m: &TestMem, body: Body, data: &[u8]) -> bool {
        let size = record_size(body.header(), data.len() as u64);
        match p.reserve(m, size, 0).unwrap() {
            None => false,
            Some(pos) => {
                m.write(pos + body.header(), data);
                p.publish(m, body, data.len() as u64);
                true
            }
        }
    }

    #[test]
    fn records_of_every_size_wrap_and_arrive_in_order() {
        let m = TestMem::new(4096);
        let mut p = Producer::new(4096);
        let (mut head, mut sent, mut got) = (0u64, 0u64, 0u64);
        let mut lens = (0..3000u64).map(|i| ((i * 37) % 700) as usize);
        let mut next = lens.next();
        while got < 3000 {
            while let Some(len) = next {
                let body =
                    if sent % 3 == 0 { Body::Bulk { cookie: sent, offset: !sent } } else { Body::Packet };
                if !send(&mut p, &m, body, &pattern(sent, len)) {
                    break;
                }
                sent += 1;
                next = lens.next();
            }
            while let Some(r) = peek(&m, head).unwrap() {
                let want_body =
                    if got % 3 == 0 { Body::Bulk { cookie: got, offset: !got } } else { Body::Packet };
                assert_eq!(r.body, want_body);
                let mut buf = vec![0; r.len as usize];
                m.read(r.payload, &mut buf);
                assert_eq!(buf, pattern(got, ((got * 37) % 700) as usize), "record {got}");
                head = r.end;
                release(&m, head);
                got += 1;
            }
        }
        assert_eq!(peek(&m, head).unwrap(), None);
    }

    #[test]
    fn a_full_ring_refuses_until_the_consumer_releases() {
        let m = TestMem::new(1024);
        let mut p = Producer::new(1024);
        let mut n = 0;
        while send(&mut p, &m, Body::Packet, &[7; 100]) {
            n += 1;
        }
        assert_eq!(n, 7, "1024 bytes hold 7 records of 128 bytes and the zeroed slot");
        let r = peek(&m, 0).unwrap().unwrap();
        release(&m, r.end);
        assert!(send(&mut p, &m, Body::Packet, &[7; 100]));
        assert!(!send(&mut p, &m, Body::Packet, &[7; 100]));
    }

    #[test]
    fn garbage_is_malformed_not_a_record() {
        let m = TestMem::new(1024);
        m.store(Word::Data(0), 12345, Ordering::Relaxed);
        assert!(peek(&m, 0).unwrap_err().0.contains("stamp"));
        m.store(Word::Data(0), 1, Ordering::Relaxed);
        m.store(Word::Data(8), 9 << 32 | 4, Ordering::Relaxed);
        assert!(peek(&m, 0).unwrap_err().0.contains("kind"));
        m.store(Word::Data(8), KIND_PACKET << 32 | 0xffff_ffff, Ordering::Relaxed);
        assert!(peek(&m, 0).unwrap_err().0.contains("too long"));
        m.store(Word::Data(8), KIND_PACKET << 32 | 1000, Ordering::Relaxed);
        assert!(peek(&m, 0).unwrap_err().0.contains("too long"), "longer than the ring");
        m.store(Word::Data(8), KIND_PACKET << 32 | 900, Ordering::Relaxed);
        assert_eq!(peek(&m, 0).unwrap().unwrap().end, 960);
    }

    #[test]
    fn a_corrupt_consumer_index_is_reported() {
        let m = TestMem::new(1024);
        let mut p = Producer::new(1024);
        while send(&mut p, &m, Body::Packet, &[1; 40]) {}
        m.store(Word::Head, 1 << 40, Ordering::Relaxed);
        assert!(p.reserve(&m, 64, 0).is_err());
        m.store(Word::Head, 65, Ordering::Relaxed);
        assert!(p.reserve(&m, 64, 0).is_err(), "unaligned");
    }
}
