//! `long double` on x86-64: the 80-bit x87 extended format, computed by the x87 unit itself.
//!
//! `MPI_LONG_DOUBLE` is C's `long double`: on the x86-64 System V ABI an x87 extended value (64-bit
//! significand with an explicit integer bit, 15-bit exponent, sign) in the first 10 bytes of a
//! 16-byte slot; the last 6 bytes are padding. Rust has no such type, and going through `f64`
//! would lose 11 bits of precision and most of the exponent range, so the arithmetic and the
//! comparisons run on the x87 unit with inline assembly: each operation loads its operands
//! (`fld tbyte`), computes, and stores the result (`fstp tbyte`), exactly what a C compiler emits
//! for `long double`. The results are those of MPICH built with GCC on the same machine: same
//! instructions, same rounding (the x87 control word, extended precision and round-to-nearest
//! unless the program changed it), same handling of NaNs, infinities, denormals and invalid
//! encodings (which the x87 unit turns into NaNs).
//!
//! This file owns that format only (arithmetic, comparison, classification); the loops that
//! use it are in `kernels`.

use std::arch::asm;
use std::cmp::Ordering;
use std::ops::{Add, Mul, Sub};

/// An x87 extended value: the 10 meaningful bytes of a `long double`, little-endian (significand
/// in bytes 0–7, sign and exponent in bytes 8–9).
#[derive(Clone, Copy, Debug)]
pub(crate) struct F80(pub(crate) [u8; 10]);

/// Loads `a` and `b` onto the x87 stack (`st(0) = a`, `st(1) = b`), applies the non-popping
/// instruction `$insn st(0), st(1)` (`st(0) = st(0) op st(1)`: no operand-order ambiguity), stores
/// `st(0)` and pops `b`, leaving the stack empty.
macro_rules! binop {
    ($name:ident, $insn:literal) => {
        #[inline]
        fn $name(a: &F80, b: &F80) -> F80 {
            let mut out = [0u8; 10];
            // SAFETY: `a`, `b` and `out` are 10-byte arrays, so each `tbyte` (10-byte) access is
            // in bounds; `out` is a local that nothing else references. Every x87 register is
            // declared clobbered, so the stack is empty on entry, and the block leaves it empty
            // (two loads, one store-and-pop, one pop), as the inline-assembly rules require. No
            // other register, flag or memory is touched, and the CPU stack is not used.
            unsafe {
                asm!(
                    "fld tbyte ptr [{b}]",
                    "fld tbyte ptr [{a}]",
                    concat!($insn, " st(0), st(1)"),
                    "fstp tbyte ptr [{out}]",
                    "fstp st(0)",
                    a = in(reg) a.0.as_ptr(),
                    b = in(reg) b.0.as_ptr(),
                    out = in(reg) out.as_mut_ptr(),
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
            F80(out)
        }
    };
}

binop!(x87_add, "fadd");
binop!(x87_sub, "fsub");
binop!(x87_mul, "fmul");

/// IEEE comparison of `a` with `b` by `fucomip`: `None` when unordered (a NaN, or an invalid
/// encoding), `+0 == -0`.
fn x87_cmp(a: &F80, b: &F80) -> Option<Ordering> {
    let (unordered, below, equal): (u8, u8, u8);
    // SAFETY: `a` and `b` are 10-byte arrays, so the `tbyte` loads are in bounds. Every x87
    // register is declared clobbered, so the stack is empty on entry; the block pushes two values
    // and pops both (`fucomip` pops one, `fstp st(0)` the other), leaving it empty. `fstp` does
    // not change EFLAGS, so the `set*` instructions read the flags `fucomip` set (ZF, PF, CF:
    // 1,1,1 unordered; 0,0,1 below; 1,0,0 equal; 0,0,0 above); the outputs are byte registers
    // the compiler chose. No memory is written and the CPU stack is not used.
    unsafe {
        asm!(
            "fld tbyte ptr [{b}]",
            "fld tbyte ptr [{a}]",
            "fucomip st, st(1)",
            "fstp st(0)",
            "setp {p}",
            "setb {c}",
            "sete {z}",
            a = in(reg) a.0.as_ptr(),
            b = in(reg) b.0.as_ptr(),
            p = out(reg_byte) unordered,
            c = out(reg_byte) below,
            z = out(reg_byte) equal,
            out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
            out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
            options(nostack, readonly),
        );
    }
    match (unordered, equal, below) {
        (0, 1, _) => Some(Ordering::Equal),
        (0, 0, 1) => Some(Ordering::Less),
        (0, 0, _) => Some(Ordering::Greater),
        _ => None,
    }
}

impl F80 {
    /// `+0.0`.
    pub(crate) const ZERO: F80 = F80([0; 10]);
    /// `1.0`: significand `0x8000_0000_0000_0000` (the explicit integer bit), exponent `0x3fff`.
    pub(crate) const ONE: F80 = F80([0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f]);
    /// `+∞`: significand `0x8000_0000_0000_0000`, exponent `0x7fff`.
    pub(crate) const INFINITY: F80 = F80([0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x7f]);

    fn significand(self) -> u64 {
        let mut s = [0u8; 8];
        s.copy_from_slice(&self.0[..8]);
        u64::from_le_bytes(s)
    }

    /// The biased exponent (15 bits).
    fn exponent(self) -> u16 {
        u16::from_le_bytes([self.0[8], self.0[9]]) & 0x7fff
    }

    /// Whether the value is ±∞ (exponent all ones, significand exactly the integer bit).
    pub(crate) fn is_infinite(self) -> bool {
        self.exponent() == 0x7fff && self.significand() == 1 << 63
    }

    /// Whether the value is unordered with itself, as C's `isnan` on `long double` (GCC compares
    /// the value with itself): a NaN, or an encoding the x87 unit rejects as an invalid operand
    /// (pseudo-NaN, pseudo-infinity, unnormal, pseudo-zero), which arithmetic turns into NaNs.
    pub(crate) fn is_nan(self) -> bool {
        x87_cmp(&self, &self).is_none()
    }

    /// `self` with the sign of `sign` (a bit copy, as C's `copysignl`).
    pub(crate) fn copysign(self, sign: F80) -> F80 {
        let mut out = self;
        out.0[9] = (self.0[9] & 0x7f) | (sign.0[9] & 0x80);
        out
    }
}

impl Add for F80 {
    type Output = F80;
    fn add(self, o: F80) -> F80 {
        x87_add(&self, &o)
    }
}

impl Sub for F80 {
    type Output = F80;
    fn sub(self, o: F80) -> F80 {
        x87_sub(&self, &o)
    }
}

impl Mul for F80 {
    type Output = F80;
    fn mul(self, o: F80) -> F80 {
        x87_mul(&self, &o)
    }
}

/// Numeric equality as C's `==` on `long double` (so `+0 == -0` and a NaN equals nothing), not
/// bit equality.
impl PartialEq for F80 {
    fn eq(&self, o: &F80) -> bool {
        x87_cmp(self, o) == Some(Ordering::Equal)
    }
}

/// The IEEE order, as C's `<`, `>` on `long double`.
impl PartialOrd for F80 {
    fn partial_cmp(&self, o: &F80) -> Option<Ordering> {
        x87_cmp(self, o)
    }
}
