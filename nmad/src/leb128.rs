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
#[inline(always)]
pub(crate) fn get(b: &[u8], at: &mut usize) -> Result<u64, Malformed> {
    // Most numbers of a packet (session, small tags and lengths) take one byte: read inline;
    // the others out of line.
    if let Some(&b0) = b.get(*at)
        && b0 < 0x80
    {
        *at += 1;
        return Ok(u64::from(b0));
    }
    get_wider(b, at)
}

/// [`get`] past one byte: sequence numbers, credits and collective tags (up to 8 bytes) are
/// read as one word when the packet has 8 bytes left; the rest byte by byte.
#[inline(never)]
fn get_wider(b: &[u8], at: &mut usize) -> Result<u64, Malformed> {
    let rest = b.get(*at..).unwrap_or_default();
    if let Some(&w) = rest.first_chunk::<8>()
        && let Some((v, n)) = from_word(u64::from_le_bytes(w))
    {
        *at += n;
        return Ok(v);
    }
    match rest {
        [b0, b1, ..] if *b1 < 0x80 => {
            *at += 2;
            Ok(u64::from(b0 & 0x7f) | u64::from(*b1) << 7)
        }
        _ => get_long(b, at),
    }
}

/// The number that starts the 8 bytes of `w` (little-endian) and its length in bytes, if it
/// ends within them: the 7-bit groups gathered by halving steps, no loop.
#[inline]
fn from_word(w: u64) -> Option<(u64, usize)> {
    let ends = !w & 0x8080_8080_8080_8080;
    if ends == 0 {
        return None;
    }
    let n = ends.trailing_zeros() / 8 + 1;
    let w = w & (u64::MAX >> (64 - 8 * n)) & 0x7f7f_7f7f_7f7f_7f7f;
    let w = (w & 0x007f_007f_007f_007f) | (w & 0x7f00_7f00_7f00_7f00) >> 1;
    let w = (w & 0x0000_3fff_0000_3fff) | (w & 0x3fff_0000_3fff_0000) >> 2;
    let w = (w & 0x0000_0000_0fff_ffff) | (w & 0x0fff_ffff_0000_0000) >> 4;
    Some((w, n as usize))
}

/// [`get`] past its one- and two-byte fast paths.
fn get_long(b: &[u8], at: &mut usize) -> Result<u64, Malformed> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_back_as_written_through_every_path() {
        for v in [0, 1, 127, 128, 300, 16_383, 16_384, 1 << 40, u64::MAX - 1, u64::MAX] {
            let mut b = Vec::new();
            put(&mut b, v);
            b.push(0x55); // what follows is left alone
            let mut at = 0;
            assert_eq!(get(&b, &mut at), Ok(v), "{v}");
            assert_eq!(at, b.len() - 1, "{v}");
            let mut at = 0;
            assert_eq!(get_long(&b, &mut at), Ok(v), "the general path agrees for {v}");
        }
    }

    #[test]
    fn numbers_read_as_one_word_agree_with_the_general_path() {
        let mut v = 1u64;
        for shift in 0..64 {
            for x in [v, v - 1, v | 0x55, v.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift] {
                let mut b = Vec::new();
                put(&mut b, x);
                let len = b.len();
                b.extend_from_slice(&[0xff; 9]); // a word is always there to read
                let mut at = 0;
                assert_eq!(get(&b, &mut at), Ok(x), "{x:#x}");
                assert_eq!(at, len, "{x:#x}");
            }
            v <<= 1;
            if v == 0 {
                break;
            }
        }
    }

    #[test]
    fn cut_short_and_overflowing_numbers_are_errors() {
        for b in [&[][..], &[0x80], &[0xff, 0x80], &[0x80, 0x80, 0x80]] {
            assert_eq!(get(b, &mut 0), Err(Malformed::CutShort), "{b:?}");
        }
        let mut wide = vec![0xff; 9];
        wide.push(0x02);
        assert_eq!(get(&wide, &mut 0), Err(Malformed::Overflow));
        let mut at = 1;
        assert_eq!(get(&[0x00, 0x81, 0x01], &mut at), Ok(129), "from an offset");
        assert_eq!(at, 3);
    }
}
