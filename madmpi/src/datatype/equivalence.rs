//! The Rust types that map to MPI's predefined datatypes, so that typed buffers can be sent and
//! received as they are.
//!
//! Owns the mapping and its safety contract.

use super::Predefined;

/// A plain Rust type that maps to an MPI datatype: every bit pattern is a valid value, so bytes
/// received from the network can be stored into it.
///
/// # Safety
/// Implementors must be `Copy` types without padding or invalid bit patterns whose layout is
/// the datatype's.
pub unsafe trait Equivalence: Copy + Send + Sync + 'static {
    const DATATYPE: Predefined;
}

macro_rules! equivalence {
    ($($t:ty => $p:ident),* $(,)?) => {$(
        // SAFETY: a primitive number: no padding, every bit pattern valid, C's layout.
        unsafe impl Equivalence for $t {
            const DATATYPE: Predefined = Predefined::$p;
        }
    )*};
}

equivalence!(
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => Uint8, u16 => Uint16, u32 => Uint32, u64 => Uint64,
    f32 => Float, f64 => Double,
);
