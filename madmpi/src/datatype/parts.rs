//! The normal form of a type: a sequence of *parts*, each `bl` consecutive elements (one extent
//! apart) of an older type at a byte displacement, in type-map order.
//!
//! Every constructor reduces to this (a vector is `count` strided parts, a struct one part per
//! member, a resized or dup type one part), so flattening and element counting walk one shape.
//! Parts are produced on the fly: a vector of a billion blocks is never listed. The displacement
//! products were checked for overflow by the constructors, so plain arithmetic is safe here.
//! This file describes the shape only: it holds no state and must not allocate per part.

use super::{Datatype, Kind};

/// `bl` elements of `old`, the first at byte `disp`.
pub(crate) struct Part<'a> {
    pub bl: u64,
    pub disp: i64,
    pub old: &'a Datatype,
}

/// The parts of a type.
pub(crate) enum Parts<'a> {
    /// A basic predefined type: no parts, it is a block of its size.
    Leaf,
    /// `count` identical parts, part `i` at `i * stride` bytes.
    Strided { count: u64, bl: u64, stride: i64, old: &'a Datatype },
    /// Parts listed in arrays.
    Listed { bls: Bls<'a>, disps: &'a [i64], unit: i64, types: Types<'a> },
}

/// Block lengths of listed parts.
pub(crate) enum Bls<'a> {
    One(u64),
    Many(&'a [i64]),
}

/// Types of listed parts.
pub(crate) enum Types<'a> {
    One(&'a Datatype),
    Many(&'a [Datatype]),
}

impl<'a> Parts<'a> {
    pub fn of(t: &'a Datatype) -> Parts<'a> {
        Parts::of_kind(&t.0.kind)
    }

    pub fn of_kind(kind: &'a Kind) -> Parts<'a> {
        let strided = |count: i64, bl: i64, stride: i64, old| Parts::Strided {
            count: count as u64,
            bl: bl as u64,
            stride,
            old,
        };
        match kind {
            Kind::Named(_) => Parts::Leaf,
            Kind::Pair(_, types, disps) => {
                Parts::Listed { bls: Bls::One(1), disps: &disps[..], unit: 1, types: Types::Many(&types[..]) }
            }
            Kind::Dup(old)
            | Kind::Resized { old, .. }
            | Kind::Subarray { body: old, .. }
            | Kind::Darray { body: old, .. }
            | Kind::F90 { base: old, .. } => strided(1, 1, 0, old),
            Kind::Contiguous { count, old } => strided(1, *count, 0, old),
            Kind::Vector { count, blocklength, stride, old } => {
                strided(*count, *blocklength, stride * old.extent(), old)
            }
            Kind::Hvector { count, blocklength, stride, old } => strided(*count, *blocklength, *stride, old),
            Kind::Indexed { blocklengths, displacements, old } => Parts::Listed {
                bls: Bls::Many(blocklengths),
                disps: displacements,
                unit: old.extent(),
                types: Types::One(old),
            },
            Kind::Hindexed { blocklengths, displacements, old } => Parts::Listed {
                bls: Bls::Many(blocklengths),
                disps: displacements,
                unit: 1,
                types: Types::One(old),
            },
            Kind::IndexedBlock { blocklength, displacements, old } => Parts::Listed {
                bls: Bls::One(*blocklength as u64),
                disps: displacements,
                unit: old.extent(),
                types: Types::One(old),
            },
            Kind::HindexedBlock { blocklength, displacements, old } => Parts::Listed {
                bls: Bls::One(*blocklength as u64),
                disps: displacements,
                unit: 1,
                types: Types::One(old),
            },
            Kind::Struct { blocklengths, displacements, types } => Parts::Listed {
                bls: Bls::Many(blocklengths),
                disps: displacements,
                unit: 1,
                types: Types::Many(types),
            },
        }
    }

    /// Number of parts.
    pub fn len(&self) -> u64 {
        match self {
            Parts::Leaf => 0,
            Parts::Strided { count, .. } => *count,
            Parts::Listed { disps, .. } => disps.len() as u64,
        }
    }

    /// Part `i < len()`.
    pub fn get(&self, i: u64) -> Part<'a> {
        match *self {
            Parts::Leaf => unreachable!("a leaf has no parts"),
            Parts::Strided { bl, stride, old, .. } => Part { bl, disp: i as i64 * stride, old },
            Parts::Listed { ref bls, disps, unit, ref types } => {
                let i = i as usize;
                Part {
                    bl: match bls {
                        Bls::One(b) => *b,
                        Bls::Many(b) => b[i] as u64,
                    },
                    disp: disps[i] * unit,
                    old: match types {
                        Types::One(t) => t,
                        Types::Many(t) => &t[i],
                    },
                }
            }
        }
    }

    /// The parts in order.
    pub fn iter(&self) -> impl Iterator<Item = Part<'a>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}
