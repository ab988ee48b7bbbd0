//! The predefined (named) C and Fortran datatypes: sizes, alignments and names on x86-64 Linux.
//!
//! This file owns the table of predefined types only; it does not know MPI handle values (the
//! C binding maps handles to [`Predefined`] elsewhere). Sizes, extents and alignments were
//! checked against MPICH 4.0.2 (`MPI_Type_size`, `MPI_Type_get_extent`, and the extent of
//! `struct {T; char}` for the alignment) and agree with the C compiler's `sizeof`/`_Alignof`.

/// Declares [`Predefined`] and [`Predefined::ALL`] from one list, so that the two keep the same
/// order ([`Predefined::index`] relies on it).
macro_rules! predefined {
    ($(#[$doc:meta])* pub enum Predefined { $($(#[$vdoc:meta])* $v:ident,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Predefined { $($(#[$vdoc])* $v,)* }

        impl Predefined {
            /// Every predefined type, basic types first (pair types are built from them).
            pub const ALL: [Predefined; [$(Predefined::$v),*].len()] = [$(Predefined::$v),*];
        }
    };
}

predefined! {
    /// A predefined MPI datatype of the C binding.
    ///
    /// Aliases that MPICH gives the same handle share a variant: `MPI_LONG_LONG` is
    /// [`Predefined::LongLong`] (named `MPI_LONG_LONG_INT`), `MPI_C_COMPLEX` is
    /// [`Predefined::CFloatComplex`] (named `MPI_C_COMPLEX`).
    pub enum Predefined {
        Char,
        SignedChar,
        UnsignedChar,
        Byte,
        WChar,
        Short,
        UnsignedShort,
        Int,
        Unsigned,
        Long,
        UnsignedLong,
        LongLong,
        UnsignedLongLong,
        Float,
        Double,
        LongDouble,
        Int8,
        Int16,
        Int32,
        Int64,
        Uint8,
        Uint16,
        Uint32,
        Uint64,
        CBool,
        CFloatComplex,
        CDoubleComplex,
        CLongDoubleComplex,
        Aint,
        Offset,
        Count,
        Packed,
        /// `struct { float; int; }`
        FloatInt,
        /// `struct { double; int; }` (extent 16)
        DoubleInt,
        /// `struct { long; int; }` (extent 16)
        LongInt,
        /// `struct { int; int; }`
        TwoInt,
        /// `struct { short; int; }` (the int at offset 4: size 6, extent 8)
        ShortInt,
        /// `struct { long double; int; }` (size 20, extent 32)
        LongDoubleInt,
        /// Fortran types (gfortran's sizes, as MPICH 4.0.2 configured on x86-64 Linux); `Real16` and
        /// `Complex32` are x87 `long double` in memory, as MPICH's `MPIR_REAL16_CTYPE`.
        Character,
        Logical,
        Integer,
        Real,
        DoublePrecision,
        Complex,
        DoubleComplex,
        Integer1,
        Integer2,
        Integer4,
        Integer8,
        Real4,
        Real8,
        Real16,
        Complex8,
        Complex16,
        Complex32,
        /// Fortran `INTEGER, INTEGER` (MINLOC/MAXLOC pairs)
        TwoInteger,
        /// Fortran `REAL, REAL`
        TwoReal,
        /// Fortran `DOUBLE PRECISION, DOUBLE PRECISION`
        TwoDoublePrecision,
    }
}

use Predefined::*;

impl Predefined {
    /// Index in [`Predefined::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The MPI name, as `MPI_Type_get_name` reports it.
    pub fn name(self) -> &'static str {
        match self {
            Char => "MPI_CHAR",
            SignedChar => "MPI_SIGNED_CHAR",
            UnsignedChar => "MPI_UNSIGNED_CHAR",
            Byte => "MPI_BYTE",
            WChar => "MPI_WCHAR",
            Short => "MPI_SHORT",
            UnsignedShort => "MPI_UNSIGNED_SHORT",
            Int => "MPI_INT",
            Unsigned => "MPI_UNSIGNED",
            Long => "MPI_LONG",
            UnsignedLong => "MPI_UNSIGNED_LONG",
            LongLong => "MPI_LONG_LONG_INT",
            UnsignedLongLong => "MPI_UNSIGNED_LONG_LONG",
            Float => "MPI_FLOAT",
            Double => "MPI_DOUBLE",
            LongDouble => "MPI_LONG_DOUBLE",
            Int8 => "MPI_INT8_T",
            Int16 => "MPI_INT16_T",
            Int32 => "MPI_INT32_T",
            Int64 => "MPI_INT64_T",
            Uint8 => "MPI_UINT8_T",
            Uint16 => "MPI_UINT16_T",
            Uint32 => "MPI_UINT32_T",
            Uint64 => "MPI_UINT64_T",
            CBool => "MPI_C_BOOL",
            CFloatComplex => "MPI_C_COMPLEX",
            CDoubleComplex => "MPI_C_DOUBLE_COMPLEX",
            CLongDoubleComplex => "MPI_C_LONG_DOUBLE_COMPLEX",
            Aint => "MPI_AINT",
            Offset => "MPI_OFFSET",
            Count => "MPI_COUNT",
            Packed => "MPI_PACKED",
            FloatInt => "MPI_FLOAT_INT",
            DoubleInt => "MPI_DOUBLE_INT",
            LongInt => "MPI_LONG_INT",
            TwoInt => "MPI_2INT",
            ShortInt => "MPI_SHORT_INT",
            LongDoubleInt => "MPI_LONG_DOUBLE_INT",
            Character => "MPI_CHARACTER",
            Logical => "MPI_LOGICAL",
            Integer => "MPI_INTEGER",
            Real => "MPI_REAL",
            DoublePrecision => "MPI_DOUBLE_PRECISION",
            Complex => "MPI_COMPLEX",
            DoubleComplex => "MPI_DOUBLE_COMPLEX",
            Integer1 => "MPI_INTEGER1",
            Integer2 => "MPI_INTEGER2",
            Integer4 => "MPI_INTEGER4",
            Integer8 => "MPI_INTEGER8",
            Real4 => "MPI_REAL4",
            Real8 => "MPI_REAL8",
            Real16 => "MPI_REAL16",
            Complex8 => "MPI_COMPLEX8",
            Complex16 => "MPI_COMPLEX16",
            Complex32 => "MPI_COMPLEX32",
            TwoInteger => "MPI_2INTEGER",
            TwoReal => "MPI_2REAL",
            TwoDoublePrecision => "MPI_2DOUBLE_PRECISION",
        }
    }

    /// The two members (type, byte offset) of a pair type used by `MPI_MINLOC`/`MPI_MAXLOC`;
    /// `None` for a basic type.
    pub fn pair(self) -> Option<[(Predefined, i64); 2]> {
        Some(match self {
            FloatInt => [(Float, 0), (Int, 4)],
            DoubleInt => [(Double, 0), (Int, 8)],
            LongInt => [(Long, 0), (Int, 8)],
            TwoInt => [(Int, 0), (Int, 4)],
            ShortInt => [(Short, 0), (Int, 4)],
            LongDoubleInt => [(LongDouble, 0), (Int, 16)],
            TwoInteger => [(Integer, 0), (Integer, 4)],
            TwoReal => [(Real, 0), (Real, 4)],
            TwoDoublePrecision => [(DoublePrecision, 0), (DoublePrecision, 8)],
            _ => return None,
        })
    }

    /// Whether this is a basic type (one element of one C type), not a pair type.
    pub fn is_basic(self) -> bool {
        self.pair().is_none()
    }

    /// Size in bytes of a basic type (`sizeof` in C); for a pair type, the packed size.
    pub fn size(self) -> u64 {
        match self {
            Char | SignedChar | UnsignedChar | Byte | Int8 | Uint8 | CBool | Packed | Character
            | Integer1 => 1,
            Short | UnsignedShort | Int16 | Uint16 | Integer2 => 2,
            WChar | Int | Unsigned | Float | Int32 | Uint32 | Logical | Integer | Real | Integer4 | Real4 => {
                4
            }
            Long | UnsignedLong | LongLong | UnsignedLongLong | Double | Int64 | Uint64 | Aint | Offset
            | Count | CFloatComplex | DoublePrecision | Complex | Integer8 | Real8 | Complex8 => 8,
            LongDouble | CDoubleComplex | DoubleComplex | Real16 | Complex16 => 16,
            CLongDoubleComplex | Complex32 => 32,
            FloatInt | TwoInt | TwoInteger | TwoReal => 8,
            DoubleInt | LongInt => 12,
            TwoDoublePrecision => 16,
            ShortInt => 6,
            LongDoubleInt => 20,
        }
    }

    /// Alignment in bytes (`_Alignof` in C), which pads the extent of struct types.
    pub fn alignment(self) -> u64 {
        match self {
            CFloatComplex | Complex | Complex8 => 4,
            CDoubleComplex | DoubleComplex | Complex16 => 8,
            CLongDoubleComplex => 16,
            // MPICH 4.0.2 pads no struct for them (yaksa has no such type): byte-aligned.
            Real16 | Complex32 => 1,
            _ => match self.pair() {
                Some([(a, _), (b, _)]) => a.alignment().max(b.alignment()),
                None => self.size(),
            },
        }
    }

    /// Which predefined types MPICH 4.0.2 represents internally (in yaksa) by the same type:
    /// integers of one size whatever their signedness or name, and the 1-byte types. Only the
    /// struct padding rule can tell (see `constructors`).
    pub(crate) fn representation(self) -> Predefined {
        match self {
            SignedChar | UnsignedChar | Byte | Int8 | Uint8 | CBool | Packed | Character | Integer1 => Char,
            UnsignedShort | Int16 | Uint16 | Integer2 => Short,
            Unsigned | Int32 | Uint32 | Integer | Integer4 | Logical => Int,
            UnsignedLong | LongLong | UnsignedLongLong | Int64 | Uint64 | Aint | Offset | Count
            | Integer8 => Long,
            p => p,
        }
    }
}
