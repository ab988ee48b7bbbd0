//! The one-sided messages on the wire: one active message carries the records of one window
//! (its context id first, then records), their data concatenated in the AM's payload in record
//! order. Origins batch their records per target, so a lock, the operations and the unlock of a
//! short epoch travel as one message, and the target's answers to it as one message back.
//!
//! Owns the encoding and the checked decoding: everything here comes from another process, so
//! every length is checked against what arrived and every code against its table ([`Malformed`]
//! otherwise). It must not touch windows or memory.

use crate::op::Builtin;
use std::fmt;

/// The handler id of one-sided messages in nmad's active-message registry.
pub(crate) const AM_ID: u16 = 0x0105;

/// Where an operation lands at the target: the displacement (in the target's displacement
/// units; an address for a dynamic window) and the target datatype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub disp: u64,
    pub ty: TypeRef,
}

/// The target datatype of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TypeRef {
    /// A contiguous type: `span` bytes from the displacement (packed form = memory form).
    Bytes { span: u64 },
    /// `count` elements of a derived type the origin described earlier on this window
    /// ([`Record::TypeDef`] with the same id).
    Derived { id: u64, count: u64 },
}

/// One record. `off`/`len` select bytes `[off, off + len)` of the operation's packed stream
/// (large operations are split into several records); `elem` is the index of the predefined
/// element type of an accumulate ([`crate::datatype::Predefined::ALL`]), `op` that of the
/// builtin operation ([`crate::op::Builtin::ALL`]); `reply` names the origin's slot the answer
/// goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// Origin to target. Payload: `len` bytes.
    Put { at: Target, off: u64, len: u32 },
    /// Payload: `len` bytes, combined element-wise into the target with `op`.
    Acc { at: Target, off: u64, len: u32, op: u8, elem: u16 },
    /// No payload; answered with [`Record::Data`].
    Get { at: Target, off: u64, len: u32, reply: u64 },
    /// Payload: `len` bytes (none for `MPI_NO_OP`); answered with the old bytes.
    GetAcc { at: Target, off: u64, len: u32, op: u8, elem: u16, reply: u64 },
    /// Payload: the new value then the compare value, one element each; answered with the old.
    Cas { disp: u64, elem: u16, reply: u64 },
    /// A passive-target lock request; later records of this origin wait for the grant.
    Lock { exclusive: bool },
    /// Releases the lock once the records before it are applied; answered with an ack.
    Unlock { reply: u64 },
    /// Answered with an ack once the records before it are applied.
    Flush { reply: u64 },
    /// PSCW: the origin's access epoch to this target ends (after its operations).
    Complete,
    /// PSCW, target to origin: the target's exposure epoch is open to it.
    Post,
    /// Blocks `first .. first + n` of a derived type of `total` blocks (payload: `n` pairs of
    /// little-endian i64 offset, u64 length), whose elements are `extent` bytes apart.
    TypeDef { id: u64, extent: i64, total: u32, first: u32, n: u32 },
    /// `len` bytes into a contiguous target, sent apart as nmad message `seq` of this origin
    /// to this target ([`crate::comm::tags::one_sided`]); later records wait for it.
    PutBulk { at: Target, len: u64, seq: u64 },
    /// `len` bytes combined element-wise into a contiguous target with `op`, sent apart as
    /// nmad message `seq` (as [`Record::PutBulk`]).
    AccBulk { at: Target, len: u64, seq: u64, op: u8, elem: u16 },
    /// `len` bytes of a contiguous target, sent back as nmad message `seq` (empty if refused,
    /// with a [`Record::Fault`] first); later records wait until it left.
    GetBulk { at: Target, len: u64, seq: u64 },
    /// Target to origin: slot `reply` is answered; `class` 0 or the MPI error class.
    Ack { reply: u64, class: u16 },
    /// Target to origin: bytes `[off, off + len)` of slot `reply`'s stream (payload).
    Data { reply: u64, off: u64, len: u32 },
    /// Target to origin: an operation without a reply failed (class), reported at the next
    /// synchronization.
    Fault { class: u16 },
}

const PUT: u8 = 1;
const ACC: u8 = 2;
const GET: u8 = 3;
const GET_ACC: u8 = 4;
const CAS: u8 = 5;
const LOCK: u8 = 6;
const UNLOCK: u8 = 7;
const FLUSH: u8 = 8;
const COMPLETE: u8 = 9;
const POST: u8 = 10;
const TYPE_DEF: u8 = 11;
const PUT_BULK: u8 = 12;
const GET_BULK: u8 = 13;
const ACC_BULK: u8 = 14;
const ACK: u8 = 20;
const DATA: u8 = 21;
const FAULT: u8 = 22;

/// The most bytes one record takes in a header.
pub(crate) const MAX_RECORD: usize = 48;

/// Bytes one [`Record::TypeDef`] block takes in the payload.
pub(crate) const TYPE_BLOCK: usize = 16;

impl Record {
    /// Payload bytes this record owns.
    pub(crate) fn payload_len(&self, elem_size: impl Fn(u16) -> Option<usize>) -> Option<usize> {
        Some(match *self {
            Record::Put { len, .. } | Record::Acc { len, .. } => len as usize,
            // MPI_NO_OP sends no origin data.
            Record::GetAcc { len, op, .. } => {
                if Builtin::ALL.get(op as usize) == Some(&Builtin::NoOp) {
                    0
                } else {
                    len as usize
                }
            }
            Record::Data { len, .. } => len as usize,
            Record::Cas { elem, .. } => 2 * elem_size(elem)?,
            Record::TypeDef { n, .. } => n as usize * TYPE_BLOCK,
            _ => 0,
        })
    }

    /// A large transfer's announcement ([`super::bulk`]).
    pub(crate) fn is_bulk(&self) -> bool {
        matches!(self, Record::PutBulk { .. } | Record::GetBulk { .. } | Record::AccBulk { .. })
    }

    /// Whether the target counts it as an operation applied (fence counts these).
    pub(crate) fn is_operation(&self) -> bool {
        matches!(
            self,
            Record::Put { .. }
                | Record::Acc { .. }
                | Record::Get { .. }
                | Record::GetAcc { .. }
                | Record::Cas { .. }
                | Record::PutBulk { .. }
                | Record::GetBulk { .. }
                | Record::AccBulk { .. }
        )
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let target = |out: &mut Vec<u8>, t: &Target| {
            out.extend_from_slice(&t.disp.to_le_bytes());
            match t.ty {
                TypeRef::Bytes { span } => {
                    out.push(0);
                    out.extend_from_slice(&span.to_le_bytes());
                }
                TypeRef::Derived { id, count } => {
                    out.push(1);
                    out.extend_from_slice(&id.to_le_bytes());
                    out.extend_from_slice(&count.to_le_bytes());
                }
            }
        };
        match *self {
            Record::Put { at, off, len } => {
                out.push(PUT);
                target(out, &at);
                put_u64(out, off);
                put_u32(out, len);
            }
            Record::Acc { at, off, len, op, elem } => {
                out.push(ACC);
                target(out, &at);
                put_u64(out, off);
                put_u32(out, len);
                out.push(op);
                out.extend_from_slice(&elem.to_le_bytes());
            }
            Record::Get { at, off, len, reply } => {
                out.push(GET);
                target(out, &at);
                put_u64(out, off);
                put_u32(out, len);
                put_u64(out, reply);
            }
            Record::GetAcc { at, off, len, op, elem, reply } => {
                out.push(GET_ACC);
                target(out, &at);
                put_u64(out, off);
                put_u32(out, len);
                out.push(op);
                out.extend_from_slice(&elem.to_le_bytes());
                put_u64(out, reply);
            }
            Record::Cas { disp, elem, reply } => {
                out.push(CAS);
                put_u64(out, disp);
                out.extend_from_slice(&elem.to_le_bytes());
                put_u64(out, reply);
            }
            Record::Lock { exclusive } => {
                out.push(LOCK);
                out.push(u8::from(exclusive));
            }
            Record::Unlock { reply } => {
                out.push(UNLOCK);
                put_u64(out, reply);
            }
            Record::Flush { reply } => {
                out.push(FLUSH);
                put_u64(out, reply);
            }
            Record::Complete => out.push(COMPLETE),
            Record::Post => out.push(POST),
            Record::TypeDef { id, extent, total, first, n } => {
                out.push(TYPE_DEF);
                put_u64(out, id);
                out.extend_from_slice(&extent.to_le_bytes());
                put_u32(out, total);
                put_u32(out, first);
                put_u32(out, n);
            }
            Record::PutBulk { at, len, seq } | Record::GetBulk { at, len, seq } => {
                out.push(if matches!(self, Record::PutBulk { .. }) { PUT_BULK } else { GET_BULK });
                target(out, &at);
                put_u64(out, len);
                put_u64(out, seq);
            }
            Record::AccBulk { at, len, seq, op, elem } => {
                out.push(ACC_BULK);
                target(out, &at);
                put_u64(out, len);
                put_u64(out, seq);
                out.push(op);
                out.extend_from_slice(&elem.to_le_bytes());
            }
            Record::Ack { reply, class } => {
                out.push(ACK);
                put_u64(out, reply);
                out.extend_from_slice(&class.to_le_bytes());
            }
            Record::Data { reply, off, len } => {
                out.push(DATA);
                put_u64(out, reply);
                put_u64(out, off);
                put_u32(out, len);
            }
            Record::Fault { class } => {
                out.push(FAULT);
                out.extend_from_slice(&class.to_le_bytes());
            }
        }
    }
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A message that does not decode: its sender broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed one-sided message: {}", self.0)
    }
}

/// Starts an AM header for window `ctx`.
pub(crate) fn header(ctx: u32) -> Vec<u8> {
    ctx.to_le_bytes().to_vec()
}

/// Records, each with its payload bytes.
pub(crate) type Records<'a> = Vec<(Record, &'a [u8])>;

/// A decoded AM: the window's context id and its records, each with its payload bytes.
pub(crate) fn decode<'a>(
    header: &[u8],
    payload: &'a [u8],
    elem_size: impl Fn(u16) -> Option<usize>,
) -> Result<(u32, Records<'a>), Malformed> {
    let mut r = Reader { b: header, at: 0 };
    let ctx = r.u32()?;
    let mut out = Vec::new();
    let mut data = payload;
    while r.at < header.len() {
        let rec = r.record()?;
        let n =
            rec.payload_len(&elem_size).ok_or_else(|| Malformed(format!("{rec:?}: unknown element type")))?;
        if n > data.len() {
            return Err(Malformed(format!("{rec:?} wants {n} payload bytes, {} left", data.len())));
        }
        let (mine, rest) = data.split_at(n);
        data = rest;
        out.push((rec, mine));
    }
    if !data.is_empty() {
        return Err(Malformed(format!("{} payload bytes beyond the records", data.len())));
    }
    Ok((ctx, out))
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Malformed> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| Malformed(format!("header cut at byte {}", self.b.len())))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, Malformed> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }

    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn target(&mut self) -> Result<Target, Malformed> {
        let disp = self.u64()?;
        let ty = match self.u8()? {
            0 => TypeRef::Bytes { span: self.u64()? },
            1 => TypeRef::Derived { id: self.u64()?, count: self.u64()? },
            t => return Err(Malformed(format!("type reference kind {t}"))),
        };
        Ok(Target { disp, ty })
    }

    fn record(&mut self) -> Result<Record, Malformed> {
        Ok(match self.u8()? {
            PUT => Record::Put { at: self.target()?, off: self.u64()?, len: self.u32()? },
            ACC => Record::Acc {
                at: self.target()?,
                off: self.u64()?,
                len: self.u32()?,
                op: self.u8()?,
                elem: self.u16()?,
            },
            GET => Record::Get { at: self.target()?, off: self.u64()?, len: self.u32()?, reply: self.u64()? },
            GET_ACC => Record::GetAcc {
                at: self.target()?,
                off: self.u64()?,
                len: self.u32()?,
                op: self.u8()?,
                elem: self.u16()?,
                reply: self.u64()?,
            },
            CAS => Record::Cas { disp: self.u64()?, elem: self.u16()?, reply: self.u64()? },
            LOCK => Record::Lock { exclusive: self.u8()? != 0 },
            UNLOCK => Record::Unlock { reply: self.u64()? },
            FLUSH => Record::Flush { reply: self.u64()? },
            COMPLETE => Record::Complete,
            POST => Record::Post,
            TYPE_DEF => Record::TypeDef {
                id: self.u64()?,
                extent: self.u64()? as i64,
                total: self.u32()?,
                first: self.u32()?,
                n: self.u32()?,
            },
            PUT_BULK => Record::PutBulk { at: self.target()?, len: self.u64()?, seq: self.u64()? },
            GET_BULK => Record::GetBulk { at: self.target()?, len: self.u64()?, seq: self.u64()? },
            ACC_BULK => Record::AccBulk {
                at: self.target()?,
                len: self.u64()?,
                seq: self.u64()?,
                op: self.u8()?,
                elem: self.u16()?,
            },
            ACK => Record::Ack { reply: self.u64()?, class: self.u16()? },
            DATA => Record::Data { reply: self.u64()?, off: self.u64()?, len: self.u32()? },
            FAULT => Record::Fault { class: self.u16()? },
            k => return Err(Malformed(format!("record kind {k}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_record() -> Vec<Record> {
        let at = Target { disp: 7, ty: TypeRef::Bytes { span: 4096 } };
        let derived = Target { disp: u64::MAX, ty: TypeRef::Derived { id: 3, count: 9 } };
        vec![
            Record::Put { at, off: 1, len: 2 },
            Record::Acc { at: derived, off: 0, len: 8, op: 0, elem: 5 },
            Record::Get { at, off: 3, len: 4, reply: 99 },
            Record::GetAcc { at, off: 0, len: 8, op: 1, elem: 2, reply: 1 },
            Record::Cas { disp: 12, elem: 2, reply: 5 },
            Record::Lock { exclusive: true },
            Record::Unlock { reply: 6 },
            Record::Flush { reply: 7 },
            Record::Complete,
            Record::Post,
            Record::TypeDef { id: 4, extent: -16, total: 3, first: 1, n: 2 },
            Record::PutBulk { at: derived, len: 1 << 40, seq: 17 },
            Record::GetBulk { at, len: 65536, seq: 0 },
            Record::AccBulk { at, len: 1 << 20, seq: u64::MAX, op: 3, elem: 7 },
            Record::Ack { reply: 8, class: 11 },
            Record::Data { reply: 9, off: 10, len: 11 },
            Record::Fault { class: 12 },
        ]
    }

    #[test]
    fn every_record_round_trips_within_its_room() {
        let size = |_| Some(8usize);
        let mut header = header(42);
        let mut payload = Vec::new();
        for r in every_record() {
            let before = header.len();
            r.encode(&mut header);
            assert!(header.len() - before <= MAX_RECORD, "{r:?} takes {} bytes", header.len() - before);
            payload.extend(std::iter::repeat_n(0xab, r.payload_len(size).unwrap()));
        }
        let (ctx, got) = decode(&header, &payload, size).unwrap();
        assert_eq!(ctx, 42);
        assert_eq!(got.into_iter().map(|(r, _)| r).collect::<Vec<_>>(), every_record());
    }

    #[test]
    fn cut_or_unknown_input_is_malformed() {
        let size = |_| Some(8usize);
        for r in every_record() {
            let mut h = header(1);
            r.encode(&mut h);
            let payload = vec![0u8; r.payload_len(size).unwrap()];
            for cut in 5..h.len() {
                assert!(decode(&h[..cut], &payload, size).is_err(), "{r:?} cut at {cut}");
            }
            if !payload.is_empty() {
                assert!(decode(&h, &payload[1..], size).is_err(), "{r:?}: a payload byte short");
            }
            assert!(
                decode(&h, &[payload.as_slice(), &[0]].concat(), size).is_err(),
                "{r:?}: a byte too many"
            );
        }
        assert!(decode(&[1, 0, 0, 0, 200], &[], size).is_err(), "an unknown kind");
        assert!(decode(&[1, 0], &[], size).is_err(), "no context id");
    }
}
