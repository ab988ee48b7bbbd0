//! Element counts of a received message: `MPI_Get_count` and `MPI_Get_elements`.
//!
//! Only the packed byte count travels, so a count of basic elements is read off the type
//! signature: whole elements, then the parts of the last, partial element in type-map order
//! (a partial basic element is not counted). Parts are walked without flattening: strided parts
//! are skipped by division, so this costs O(depth × listed parts), not O(blocks).

use super::parts::{Part, Parts};
use super::{Datatype, Kind, Predefined};

impl Datatype {
    /// `MPI_Get_count` for `bytes` received: `None` (`MPI_UNDEFINED`) unless a whole number of
    /// elements. A zero-size type counts 0 elements in 0 bytes.
    pub fn get_count(&self, bytes: u64) -> Option<u64> {
        match self.size() {
            0 => (bytes == 0).then_some(0),
            s => bytes.is_multiple_of(s).then_some(bytes / s),
        }
    }

    /// `MPI_Get_elements_x` for `bytes` received: the basic elements received, counting the
    /// whole basic elements of a partial last element. `None` (`MPI_UNDEFINED`) when the bytes
    /// end inside a basic element of a predefined basic type or inside an `MPI_2INT` pair (as
    /// MPICH does), or are not 0 for a zero-size type.
    pub fn get_elements(&self, bytes: u64) -> Option<u64> {
        let s = self.size();
        if s == 0 {
            return (bytes == 0).then_some(0);
        }
        // Basic types, and MPI_2INT, which MPICH 4.0.2 handles as a basic type of two elements:
        // whole elements only.
        if let Kind::Named(_) | Kind::Pair(Predefined::TwoInt, ..) = self.0.kind {
            return self.get_count(bytes).map(|n| n * self.num_elements());
        }
        // `elements <= size`, so this does not overflow.
        Some(bytes / s * self.num_elements() + partial(self, bytes % s))
    }

    /// `MPI_Status_set_elements`: the byte count a status records for `count` elements of this
    /// type, `count` × size, as MPICH stores it. `MPI_Get_count` then returns `count`, and so
    /// does `MPI_Get_elements` for a basic type (for a derived type it returns the basic
    /// elements of `count` whole elements, as in MPICH). `None` beyond a status's 63 bits.
    pub fn status_bytes(&self, count: u64) -> Option<u64> {
        count.checked_mul(self.size()).filter(|&b| i64::try_from(b).is_ok())
    }
}

/// Basic elements in the first `rem < size` packed bytes of one element of `t`.
fn partial(t: &Datatype, rem: u64) -> u64 {
    if rem == 0 {
        return 0;
    }
    let parts = Parts::of(t);
    if let Parts::Strided { bl, old, .. } = parts {
        let psize = bl * old.size();
        return rem / psize * bl * old.num_elements() + within(&Part { bl, disp: 0, old }, rem % psize);
    }
    let mut rem = rem;
    let mut n = 0;
    for p in parts.iter() {
        let psize = p.bl * p.old.size();
        if rem < psize {
            return n + within(&p, rem);
        }
        rem -= psize;
        n += p.bl * p.old.num_elements();
    }
    n
}

/// Basic elements in the first `rem` packed bytes of a part, `rem` less than its size.
fn within(p: &Part, rem: u64) -> u64 {
    if rem == 0 {
        return 0;
    }
    let s = p.old.size();
    rem / s * p.old.num_elements() + partial(p.old, rem % s)
}
