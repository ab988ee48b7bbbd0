//! Datatype handles: MPICH's predefined handle values mapped once to the engine's
//! [`Predefined`] types, and the datatypes the library creates (a [`Table`](crate::table::Table)).
//!
//! Builtin handles carry a distinct number in their low byte, so the predefined lookup is an
//! array index and one comparison; the pair types are MPICH's direct handles 0 to 4.
//!
//! Owns the handle → [`Datatype`] mapping; it must not compute datatype attributes (the
//! engine does).

use crate::state::State;
use madmpi::abi::{self, Handle, HandleKind, ObjectType};
use madmpi::datatype::{Datatype, Predefined};
use madmpi::error::Error;
use std::sync::LazyLock;

/// Every predefined datatype handle with its type (aliases share a handle and a type).
const PREDEFINED: [(Handle, Predefined); 58] = {
    use Predefined::*;
    use abi::*;
    [
        (MPI_CHAR, Char),
        (MPI_SIGNED_CHAR, SignedChar),
        (MPI_UNSIGNED_CHAR, UnsignedChar),
        (MPI_BYTE, Byte),
        (MPI_WCHAR, WChar),
        (MPI_SHORT, Short),
        (MPI_UNSIGNED_SHORT, UnsignedShort),
        (MPI_INT, Int),
        (MPI_UNSIGNED, Unsigned),
        (MPI_LONG, Long),
        (MPI_UNSIGNED_LONG, UnsignedLong),
        (MPI_LONG_LONG_INT, LongLong),
        (MPI_UNSIGNED_LONG_LONG, UnsignedLongLong),
        (MPI_FLOAT, Float),
        (MPI_DOUBLE, Double),
        (MPI_LONG_DOUBLE, LongDouble),
        (MPI_INT8_T, Int8),
        (MPI_INT16_T, Int16),
        (MPI_INT32_T, Int32),
        (MPI_INT64_T, Int64),
        (MPI_UINT8_T, Uint8),
        (MPI_UINT16_T, Uint16),
        (MPI_UINT32_T, Uint32),
        (MPI_UINT64_T, Uint64),
        (MPI_C_BOOL, CBool),
        (MPI_C_FLOAT_COMPLEX, CFloatComplex),
        (MPI_C_DOUBLE_COMPLEX, CDoubleComplex),
        (MPI_C_LONG_DOUBLE_COMPLEX, CLongDoubleComplex),
        (MPI_AINT, Aint),
        (MPI_OFFSET, Offset),
        (MPI_COUNT, Count),
        (MPI_PACKED, Packed),
        (MPI_FLOAT_INT, FloatInt),
        (MPI_DOUBLE_INT, DoubleInt),
        (MPI_LONG_INT, LongInt),
        (MPI_2INT, TwoInt),
        (MPI_SHORT_INT, ShortInt),
        (MPI_LONG_DOUBLE_INT, LongDoubleInt),
        (MPI_CHARACTER, Character),
        (MPI_LOGICAL, Logical),
        (MPI_INTEGER, Integer),
        (MPI_REAL, Real),
        (MPI_DOUBLE_PRECISION, DoublePrecision),
        (MPI_COMPLEX, Complex),
        (MPI_DOUBLE_COMPLEX, DoubleComplex),
        (MPI_INTEGER1, Integer1),
        (MPI_INTEGER2, Integer2),
        (MPI_INTEGER4, Integer4),
        (MPI_INTEGER8, Integer8),
        (MPI_REAL4, Real4),
        (MPI_REAL8, Real8),
        (MPI_REAL16, Real16),
        (MPI_COMPLEX8, Complex8),
        (MPI_COMPLEX16, Complex16),
        (MPI_COMPLEX32, Complex32),
        (MPI_2INTEGER, TwoInteger),
        (MPI_2REAL, TwoReal),
        (MPI_2DOUBLE_PRECISION, TwoDoublePrecision),
    ]
};

/// The builtin predefined handles by low byte, with their index in [`PREDEFINED`] (handle 0
/// where none): what the hot one-sided calls check a datatype against, without the lazy table.
const BUILTIN: [(Handle, u8); 256] = {
    let mut t = [(0, 0); 256];
    let mut i = 0;
    while i < PREDEFINED.len() {
        let h = PREDEFINED[i].0;
        if matches!(abi::handle_kind(h), HandleKind::Builtin) {
            t[(h & 0xff) as usize] = (h, i as u8);
        }
        i += 1;
    }
    t
};

/// The element size of `h` when it is a builtin predefined datatype (what the tests check of
/// [`builtin_elem`]).
#[cfg(test)]
fn builtin_size(h: Handle) -> Option<usize> {
    builtin_elem(h).map(|(_, n)| n)
}

/// The element type and size of `h` when it is a builtin predefined datatype (one contiguous
/// element: not a pair type, not `MPI_LB`/`MPI_UB`), the size read from the handle as MPICH
/// encodes it.
pub(crate) fn builtin_elem(h: Handle) -> Option<(Predefined, usize)> {
    let (handle, i) = BUILTIN[(h & 0xff) as usize];
    if handle != h || h == 0 {
        return None;
    }
    Some((PREDEFINED[i as usize].1, abi::builtin_datatype_size(h)?))
}

/// Number of MPICH's direct (pair) datatype handles.
const DIRECT_PAIRS: usize = 5;

/// The predefined types by handle: builtins by low byte, pairs by direct index.
struct Lookup {
    builtin: [Option<(Handle, Datatype)>; 256],
    direct: [Option<(Handle, Datatype)>; DIRECT_PAIRS],
}

static LOOKUP: LazyLock<Lookup> = LazyLock::new(|| {
    let mut l = Lookup { builtin: std::array::from_fn(|_| None), direct: std::array::from_fn(|_| None) };
    for (h, p) in PREDEFINED {
        let slot = match abi::handle_kind(h) {
            HandleKind::Builtin => &mut l.builtin[(h & 0xff) as usize],
            _ => &mut l.direct[(h & 0xff) as usize],
        };
        assert!(slot.is_none(), "two predefined datatypes share handle slot {h:#x}");
        *slot = Some((h, Datatype::predefined(p)));
    }
    l
});

/// The predefined datatype of handle `h`, if `h` is one (`MPI_LB`/`MPI_UB` are not: MPI-3 removed
/// them and the engine has no such types).
pub(crate) fn predefined(h: Handle) -> Option<&'static Datatype> {
    if abi::handle_object(h) != ObjectType::Datatype {
        return None;
    }
    let entry = match abi::handle_kind(h) {
        HandleKind::Builtin => LOOKUP.builtin[(h & 0xff) as usize].as_ref(),
        HandleKind::Direct => LOOKUP.direct.get((h & 0xff_ffff) as usize)?.as_ref(),
        _ => None,
    }?;
    (entry.0 == h).then_some(&entry.1)
}

/// The handle of the predefined type `p` (the one alias handles share).
pub(crate) fn predefined_handle(p: Predefined) -> Handle {
    PREDEFINED.iter().find(|(_, q)| *q == p).map(|(h, _)| *h).expect("every predefined type has a handle")
}

impl State {
    /// The datatype of handle `h`: `MPI_ERR_TYPE` for `MPI_DATATYPE_NULL` and anything that is
    /// not a live datatype handle.
    pub(crate) fn datatype(&self, h: Handle) -> Result<Datatype, Error> {
        if let Some(t) = predefined(h) {
            return Ok(t.clone());
        }
        if h == abi::MPI_DATATYPE_NULL {
            return Err(Error::datatype("null datatype (MPI_DATATYPE_NULL)"));
        }
        self.datatypes.get(h).ok_or_else(|| Error::datatype(format!("invalid datatype handle {h:#x}")))
    }

    /// The datatype of handle `h`, which must be committed (to communicate with it).
    pub(crate) fn committed_datatype(&self, h: Handle) -> Result<Datatype, Error> {
        let t = self.datatype(h)?;
        if !t.is_committed() {
            return Err(Error::datatype(format!("datatype {h:#x} is not committed (MPI_Type_commit)")));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_sizes_are_the_types_and_only_contiguous_ones() {
        for (h, p) in PREDEFINED {
            let t = predefined(h).expect("predefined");
            match builtin_size(h) {
                Some(n) => {
                    assert_eq!(n as u64, t.size(), "{p:?}");
                    assert_eq!(builtin_elem(h).map(|e| e.0), Some(p));
                    assert_eq!(t.contiguous_offset(), Some(0), "{p:?}");
                }
                None => {
                    assert!(!matches!(abi::handle_kind(h), HandleKind::Builtin), "{p:?}: the pair types only")
                }
            }
        }
        for h in [abi::MPI_DATATYPE_NULL, abi::MPI_LB, abi::MPI_UB, abi::MPI_COMM_WORLD, 0] {
            assert_eq!(builtin_size(h), None, "{h:#x}");
        }
    }

    #[test]
    fn every_predefined_type_has_its_handle() {
        for p in Predefined::ALL {
            let n = PREDEFINED.iter().filter(|(_, q)| *q == p).count();
            assert_eq!(n, 1, "{p:?}");
        }
        for (h, p) in PREDEFINED {
            let t = predefined(h).unwrap_or_else(|| panic!("{h:#x}"));
            assert_eq!(t.as_predefined(), Some(p));
            assert_eq!(predefined_handle(p), h);
            // Builtin handles state their size; it must be the engine's.
            if let Some(size) = abi::builtin_datatype_size(h) {
                assert_eq!(size as u64, t.size(), "{p:?}");
            }
        }
        assert_eq!(predefined(abi::MPI_LONG_LONG).unwrap().as_predefined(), Some(Predefined::LongLong));
        assert_eq!(predefined(abi::MPI_C_COMPLEX).unwrap().as_predefined(), Some(Predefined::CFloatComplex));
    }

    #[test]
    fn other_handles_are_not_predefined_types() {
        for h in [
            abi::MPI_DATATYPE_NULL,
            abi::MPI_LB,
            abi::MPI_UB,
            abi::MPI_COMM_WORLD,
            abi::MPI_INT | 0x0100_0000,
            abi::MPI_FLOAT_INT + 5,
            0x4c00_01ff,
            -1,
            0,
        ] {
            assert!(predefined(h).is_none(), "{h:#x}");
        }
    }
}
