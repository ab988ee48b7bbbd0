//! LEB128 numbers, as the packet format (`core::wire`) and address keys (`drivers::memkey`)
//! write them: seven bits per byte, low bits first, the high bit set on every byte but the last.
//!
//! It owns the encoding and its checks (input is untrusted: a number cut short or wider than 64
//! bits is an error, never a panic); what a number means is its callers' business.

/// Why a number could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Malformed {
    /// The input ends inside the number.
    CutShort,
    /// More than 64 bits.
    Overflow,
}

/// Appends `v`.
#[inline]
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads the number at `*at` and moves `*at` past it.
#[inline]
pub(crate) fn get(b: &[u8], at: &mut usize) -> Result<u64, Malformed> {
    // Most numbers of a packet (session, tag, small lengths) take one byte.
    if let Some(&byte) = b.get(*at)
        && byte < 0x80
    {
        *at += 1;
        return Ok(u64::from(byte));
    }
    let mut v = 0u64;
    for i in 0..10 {
        let byte = *b.get(*at).ok_or(Malformed::CutShort)?;
        *at += 1;
        if i == 9 && byte > 1 {
            return Err(Malformed::Overflow);
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Malformed::Overflow)
}
