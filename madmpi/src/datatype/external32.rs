//! The "external32" representation of `MPI_Pack_external`/`MPI_Unpack_external` (MPI 4.0,
//! 14.5.2): every basic element big-endian, with the portable sizes of Table 14.2, which are not
//! always the native ones: `long` and `unsigned long` take 4 bytes, `wchar_t` 2, and
//! `long double` is an IEEE 754 binary128 (16 bytes). MPICH 4.0.2 writes the same bytes (checked
//! by `tests/c/external32.c`; MPICH aborts on `MPI_WCHAR` and the pair types, done here as the
//! standard says: a pair is its two members).
//!
//! A value that has no external32 representation (a `long` beyond 32 bits, a `wchar_t` beyond
//! 16) is `MPI_ERR_CONVERSION` (MPICH truncates it). Elements are converted one by one along the
//! type map, in order. This file owns the conversions and the walk; the caller answers for the
//! user buffer.

use super::error::{Checked, ErrorKind, Result, TypeError};
use super::parts::Parts;
use super::{Datatype, Kind, Predefined};

/// How one basic element is converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Codec {
    /// Bytes copied as they are.
    Copy(usize),
    /// A little-endian number of that many bytes, byte-swapped.
    Swap(usize),
    /// A native 8-byte integer (`signed` or not) stored in `to` bytes.
    Narrow { to: usize, signed: bool },
    /// An x87 80-bit `long double` (16 bytes in memory) as a binary128.
    Quad,
    /// Two components, each with the codec (the complex types).
    Twice(&'static Codec),
}

impl Codec {
    fn of(p: Predefined) -> Codec {
        use Predefined::*;
        match p {
            Char | SignedChar | UnsignedChar | Byte | Int8 | Uint8 | CBool | Packed | Character
            | Integer1 => Codec::Copy(1),
            Short | UnsignedShort | Int16 | Uint16 | Integer2 => Codec::Swap(2),
            Int | Unsigned | Float | Int32 | Uint32 | Logical | Integer | Real | Integer4 | Real4 => {
                Codec::Swap(4)
            }
            LongLong | UnsignedLongLong | Double | Int64 | Uint64 | Aint | Offset | Count
            | DoublePrecision | Integer8 | Real8 => Codec::Swap(8),
            Long => Codec::Narrow { to: 4, signed: true },
            UnsignedLong => Codec::Narrow { to: 4, signed: false },
            WChar => Codec::Narrow { to: 2, signed: false },
            LongDouble | Real16 => Codec::Quad,
            CFloatComplex | Complex | Complex8 => Codec::Twice(&Codec::Swap(4)),
            CDoubleComplex | DoubleComplex | Complex16 => Codec::Twice(&Codec::Swap(8)),
            CLongDoubleComplex | Complex32 => Codec::Twice(&Codec::Quad),
            // Pair types reach here through their members only.
            FloatInt | DoubleInt | LongInt | TwoInt | ShortInt | LongDoubleInt | TwoInteger | TwoReal
            | TwoDoublePrecision => {
                unreachable!("pair types are walked member by member")
            }
        }
    }

    /// Bytes in external32.
    fn size(self) -> usize {
        match self {
            Codec::Copy(n) | Codec::Swap(n) | Codec::Narrow { to: n, .. } => n,
            Codec::Quad => 16,
            Codec::Twice(c) => 2 * c.size(),
        }
    }

    /// Bytes in memory.
    fn native(self) -> usize {
        match self {
            Codec::Copy(n) | Codec::Swap(n) => n,
            Codec::Narrow { to: 2, .. } => 4, // wchar_t
            Codec::Narrow { .. } => 8,
            Codec::Quad => 16,
            Codec::Twice(c) => 2 * c.native(),
        }
    }

    /// Native bytes `src` to external32 bytes `dst` (both of this codec's sizes).
    fn encode(self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        match self {
            Codec::Copy(_) => dst.copy_from_slice(src),
            Codec::Swap(_) => dst.iter_mut().zip(src.iter().rev()).for_each(|(d, s)| *d = *s),
            Codec::Narrow { to, signed } => {
                let mut le = [0u8; 8];
                le[..src.len()].copy_from_slice(src);
                let v = u64::from_le_bytes(le);
                let fits = match (src.len(), signed) {
                    (8, true) => i32::try_from(v as i64).is_ok(),
                    (8, false) => u32::try_from(v).is_ok(),
                    _ => u16::try_from(v).is_ok(), // wchar_t: a code point below 2^16
                };
                if !fits {
                    return Err(TypeError::new(
                        ErrorKind::Conversion,
                        format!("{v:#x} has no {to}-byte external32 representation"),
                    ));
                }
                dst.copy_from_slice(&v.to_be_bytes()[8 - to..]);
            }
            Codec::Quad => dst.copy_from_slice(&x87_to_binary128(src.try_into().expect("16 bytes"))),
            Codec::Twice(c) => {
                let (n, e) = (c.native(), c.size());
                c.encode(&src[..n], &mut dst[..e])?;
                c.encode(&src[n..], &mut dst[e..])?;
            }
        }
        Ok(())
    }

    /// External32 bytes `src` to native bytes `dst`.
    fn decode(self, src: &[u8], dst: &mut [u8]) {
        match self {
            Codec::Copy(_) => dst.copy_from_slice(src),
            Codec::Swap(_) => dst.iter_mut().zip(src.iter().rev()).for_each(|(d, s)| *d = *s),
            Codec::Narrow { to, signed } => {
                let mut be = [0u8; 8];
                be[8 - to..].copy_from_slice(src);
                let mut v = u64::from_be_bytes(be);
                if signed && src[0] & 0x80 != 0 {
                    v |= u64::MAX << (8 * to); // sign extension
                }
                dst.copy_from_slice(&v.to_le_bytes()[..dst.len()]);
            }
            Codec::Quad => dst.copy_from_slice(&binary128_to_x87(src.try_into().expect("16 bytes"))),
            Codec::Twice(c) => {
                let (n, e) = (c.native(), c.size());
                c.decode(&src[..e], &mut dst[..n]);
                c.decode(&src[e..], &mut dst[n..]);
            }
        }
    }
}

/// An x87 extended value (little-endian, 16 bytes: 64-bit mantissa with its integer bit, then
/// sign and 15-bit exponent) as a big-endian binary128. Exact: both have the same exponent bias
/// and binary128 has more fraction bits.
pub(crate) fn x87_to_binary128(x: &[u8; 16]) -> [u8; 16] {
    let mant = u64::from_le_bytes(x[..8].try_into().expect("8 bytes"));
    let se = u16::from_le_bytes([x[8], x[9]]);
    let mut exp = u128::from(se & 0x7fff);
    if exp == 0 && mant >> 63 == 1 {
        exp = 1; // a pseudo-denormal is the normal number of exponent 1
    }
    let frac = u128::from(mant & !(1 << 63)) << 49;
    (u128::from(se >> 15) << 127 | exp << 112 | frac).to_be_bytes()
}

/// A big-endian binary128 as an x87 extended value, rounded to nearest even (16 bytes, the
/// last 6 zero).
pub(crate) fn binary128_to_x87(q: &[u8; 16]) -> [u8; 16] {
    let v = u128::from_be_bytes(*q);
    let sign = (v >> 127) as u16;
    let mut exp = ((v >> 112) & 0x7fff) as u16;
    let frac = v & ((1 << 112) - 1);
    let mut m = (frac >> 49) as u64;
    if exp == 0x7fff {
        if frac != 0 && m == 0 {
            m = 1 << 62; // a NaN whose payload is all in the dropped bits stays a (quiet) NaN
        }
    } else {
        let rest = frac & ((1 << 49) - 1);
        let half = 1u128 << 48;
        if rest > half || (rest == half && m & 1 == 1) {
            m += 1;
            if m == 1 << 63 {
                m = 0;
                exp += 1; // carried into the exponent (up to infinity)
            }
        }
    }
    if exp != 0 {
        m |= 1 << 63; // the explicit integer bit of normal numbers and infinities
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&m.to_le_bytes());
    out[8..10].copy_from_slice(&(sign << 15 | exp).to_le_bytes());
    out
}

/// Calls `f(offset, codec)` for every basic element of one element of `t` at byte `base`, in
/// type-map order.
fn walk(t: &Datatype, base: i64, f: &mut dyn FnMut(i64, Codec) -> Result<()>) -> Result<()> {
    if let Kind::Named(p) = t.0.kind {
        return f(base, Codec::of(p));
    }
    for part in Parts::of(t).iter() {
        let step = part.old.extent();
        let mut at = base.add_(part.disp)?;
        for k in 0..part.bl {
            if k > 0 {
                at = at.add_(step)?;
            }
            walk(part.old, at, f)?;
        }
    }
    Ok(())
}

impl Datatype {
    /// Bytes of `count` elements in external32 (`MPI_Pack_external_size`).
    pub fn external32_size(&self, count: i64) -> Result<u64> {
        if count < 0 {
            return Err(TypeError::count(format!("negative count ({count})")));
        }
        (count as u64).mul_(self.external32_element_size()?)
    }

    /// Bytes of one element in external32.
    fn external32_element_size(&self) -> Result<u64> {
        if let Kind::Named(p) = self.0.kind {
            return Ok(Codec::of(p).size() as u64);
        }
        let parts = Parts::of(self);
        if let Parts::Strided { count, bl, old, .. } = parts {
            return count.mul_(bl)?.mul_(old.external32_element_size()?);
        }
        parts.iter().try_fold(0u64, |n, p| n.add_(p.bl.mul_(p.old.external32_element_size()?)?))
    }

    /// Packs `count` elements at `inbuf` in external32 into `outbuf` from `*position`, which
    /// advances (`MPI_Pack_external`). Nothing is written if `outbuf` is too small; on a
    /// conversion error, the elements before the failing one are written and `*position` stays.
    ///
    /// # Safety
    /// Every basic element of the type map of `count` elements from `inbuf` (as for
    /// [`Datatype::pack`]) must be readable and must not overlap `outbuf`.
    pub unsafe fn pack_external32(
        &self,
        inbuf: *const u8,
        count: i64,
        outbuf: &mut [u8],
        position: &mut usize,
    ) -> Result<()> {
        self.room(outbuf.len(), *position, count, "pack_external")?;
        let ext = self.extent();
        let mut at = *position;
        for i in 0..count {
            walk(self, i.mul_(ext)?, &mut |off, codec| {
                let mut native = [0u8; 32];
                let native = &mut native[..codec.native()];
                // SAFETY: a basic element of the type map, readable by the caller's contract;
                // `native` is a local buffer of exactly its size.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        inbuf.wrapping_offset(off as isize),
                        native.as_mut_ptr(),
                        native.len(),
                    )
                };
                let n = codec.size();
                codec.encode(native, &mut outbuf[at..at + n])?;
                at += n;
                Ok(())
            })?;
        }
        *position = at;
        Ok(())
    }

    /// Unpacks `count` elements in external32 from `inbuf` at `*position` into `outbuf`, then
    /// advances `*position` (`MPI_Unpack_external`). Nothing is written if `inbuf` is too short.
    ///
    /// # Safety
    /// Every basic element of the type map of `count` elements from `outbuf` must be writable,
    /// not accessed concurrently, and must not overlap `inbuf`.
    pub unsafe fn unpack_external32(
        &self,
        inbuf: &[u8],
        position: &mut usize,
        outbuf: *mut u8,
        count: i64,
    ) -> Result<()> {
        self.room(inbuf.len(), *position, count, "unpack_external")?;
        let ext = self.extent();
        let mut at = *position;
        for i in 0..count {
            walk(self, i.mul_(ext)?, &mut |off, codec| {
                let mut native = [0u8; 32];
                let native = &mut native[..codec.native()];
                let n = codec.size();
                codec.decode(&inbuf[at..at + n], native);
                at += n;
                // SAFETY: a basic element of the type map, writable by the caller's contract;
                // `native` holds exactly its bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        native.as_ptr(),
                        outbuf.wrapping_offset(off as isize),
                        native.len(),
                    )
                };
                Ok(())
            })?;
        }
        *position = at;
        Ok(())
    }

    /// Checks that `count` elements fit from `at` in a buffer of `len` bytes (the type must be
    /// committed).
    fn room(&self, len: usize, at: usize, count: i64, what: &str) -> Result<()> {
        self.flat()?;
        let n = usize::try_from(self.external32_size(count)?).map_err(|_| TypeError::overflow())?;
        if at > len || len - at < n {
            return Err(TypeError::new(
                ErrorKind::Truncate,
                format!("{what}: {n} bytes do not fit at position {at} of a {len}-byte buffer"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quad(v: u128) -> [u8; 16] {
        v.to_be_bytes()
    }

    /// An x87 value from its mantissa and sign/exponent.
    fn x87(mant: u64, se: u16) -> [u8; 16] {
        let mut x = [0u8; 16];
        x[..8].copy_from_slice(&mant.to_le_bytes());
        x[8..10].copy_from_slice(&se.to_le_bytes());
        x
    }

    #[test]
    fn long_doubles_become_binary128_and_back() {
        // 3.0 = 1.1b x 2^1 (MPICH's bytes: 40 00 80 00 ...), -2.5, 1.0, the smallest denormal,
        // infinity, a quiet NaN.
        let cases = [
            (x87(0xc000_0000_0000_0000, 0x4000), 0x4000_8000u128 << 96),
            (x87(0xa000_0000_0000_0000, 0xc000), 0xc000_4000u128 << 96),
            (x87(1 << 63, 0x3fff), 0x3fff_0000u128 << 96),
            (x87(1, 0), 1u128 << 49),
            (x87(1 << 63, 0x7fff), 0x7fff_0000u128 << 96),
            (x87(0xc000_0000_0000_0000, 0x7fff), 0x7fff_8000u128 << 96),
        ];
        for (x, q) in cases {
            assert_eq!(x87_to_binary128(&x), quad(q), "{x:02x?}");
            assert_eq!(binary128_to_x87(&quad(q)), x, "{q:#x}");
        }
        // Rounding to nearest even on the 49 dropped bits, with a carry into the exponent.
        let one = 0x3fff_0000u128 << 96;
        assert_eq!(binary128_to_x87(&quad(one | 1 << 48)), x87(1 << 63, 0x3fff), "a tie to even");
        assert_eq!(binary128_to_x87(&quad(one | 3 << 48)), x87((1 << 63) + 2, 0x3fff), "a tie up");
        let below_two = one | ((1u128 << 112) - 1);
        assert_eq!(binary128_to_x87(&quad(below_two)), x87(1 << 63, 0x4000), "carried");
        // A NaN whose payload is only in the dropped bits stays a NaN.
        let nan = binary128_to_x87(&quad(0x7fff_0000u128 << 96 | 1));
        assert_eq!(u16::from_le_bytes([nan[8], nan[9]]), 0x7fff);
        assert_ne!(u64::from_le_bytes(nan[..8].try_into().unwrap()) << 1, 0);
    }

    #[test]
    fn portable_sizes_and_big_endian_bytes() {
        use Predefined::*;
        let sizes = [(Long, 4), (UnsignedLong, 4), (WChar, 2), (LongDouble, 16), (CLongDoubleComplex, 32)];
        for (p, n) in sizes {
            assert_eq!(Datatype::predefined(p).external32_size(3).unwrap(), 3 * n, "{p:?}");
        }
        assert_eq!(Datatype::predefined(LongDoubleInt).external32_size(1).unwrap(), 20);
        assert_eq!(Datatype::predefined(Int).external32_size(-1).unwrap_err().kind, ErrorKind::Count);
        let v: [i64; 2] = [-5, 1 << 40];
        let mut out = [0u8; 8];
        let mut pos = 0;
        let long = Datatype::predefined(Long);
        // SAFETY: `v` holds the 2 longs read; `out` is a distinct buffer.
        unsafe { long.pack_external32(v.as_ptr().cast(), 1, &mut out, &mut pos) }.unwrap();
        assert_eq!((&out[..4], pos), (&[0xff, 0xff, 0xff, 0xfb][..], 4));
        // SAFETY: as above.
        let e = unsafe { long.pack_external32(v[1..].as_ptr().cast(), 1, &mut out, &mut pos) }.unwrap_err();
        assert_eq!((e.kind, pos), (ErrorKind::Conversion, 4));
        let mut back = [0i64; 1];
        let mut at = 0;
        // SAFETY: `back` holds one long, distinct from `out`.
        unsafe { long.unpack_external32(&out, &mut at, back.as_mut_ptr().cast(), 1) }.unwrap();
        assert_eq!((back[0], at), (-5, 4));
        // Too small: nothing written, the position stays.
        let mut small = [0u8; 3];
        let mut at = 0;
        // SAFETY: as above.
        let e = unsafe { long.pack_external32(v.as_ptr().cast(), 1, &mut small, &mut at) }.unwrap_err();
        assert_eq!((e.kind, at, small), (ErrorKind::Truncate, 0, [0; 3]));
    }

    #[test]
    fn derived_types_convert_along_their_type_map() {
        use Predefined::*;
        // struct { short s; long l; } x2, resized: the second element starts at 16.
        let t = Datatype::create_struct(
            &[1, 1],
            &[0, 8],
            &[Datatype::predefined(Short), Datatype::predefined(Long)],
        )
        .unwrap();
        t.commit().unwrap();
        let v: [i64; 4] = [0x0102, 0x0304, 0x0506, -2];
        let mut out = [0u8; 12];
        let mut pos = 0;
        // SAFETY: 2 elements of extent 16 lie in the 32 bytes of `v`; `out` is distinct.
        unsafe { t.pack_external32(v.as_ptr().cast(), 2, &mut out, &mut pos) }.unwrap();
        assert_eq!(out, [1, 2, 0, 0, 3, 4, 5, 6, 0xff, 0xff, 0xff, 0xfe]);
        let mut back = [0i64; 4];
        let mut at = 0;
        // SAFETY: as above, for writes into `back`.
        unsafe { t.unpack_external32(&out, &mut at, back.as_mut_ptr().cast(), 2) }.unwrap();
        assert_eq!((back[0] as i16, back[1], back[2] as i16, back[3], at), (0x0102, 0x0304, 0x0506, -2, 12));
    }
}
