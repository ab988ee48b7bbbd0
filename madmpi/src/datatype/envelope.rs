//! `MPI_Type_get_envelope` and `MPI_Type_get_contents`: how a type was built.
//!
//! This file owns the combiner constants, numbered as in MPICH 4.0's `mpi.h` (the ABI we
//! implement); nothing else should hard-code them. A type built by a large-count constructor
//! gives its counts, block lengths and displacements as *large counts* (MPI 4.0, Table 5.2):
//! every integer and address argument, except the `ndims` and `order` of a subarray and every
//! argument but `gsizes` of a darray, which stay integers.

use super::constructors::Order;
use super::error::{Result, TypeError};
use super::{Datatype, Kind};

pub const COMBINER_NAMED: i32 = 1;
pub const COMBINER_DUP: i32 = 2;
pub const COMBINER_CONTIGUOUS: i32 = 3;
pub const COMBINER_VECTOR: i32 = 4;
pub const COMBINER_HVECTOR_INTEGER: i32 = 5;
pub const COMBINER_HVECTOR: i32 = 6;
pub const COMBINER_INDEXED: i32 = 7;
pub const COMBINER_HINDEXED_INTEGER: i32 = 8;
pub const COMBINER_HINDEXED: i32 = 9;
pub const COMBINER_INDEXED_BLOCK: i32 = 10;
pub const COMBINER_STRUCT_INTEGER: i32 = 11;
pub const COMBINER_STRUCT: i32 = 12;
pub const COMBINER_SUBARRAY: i32 = 13;
pub const COMBINER_DARRAY: i32 = 14;
pub const COMBINER_F90_REAL: i32 = 15;
pub const COMBINER_F90_COMPLEX: i32 = 16;
pub const COMBINER_F90_INTEGER: i32 = 17;
pub const COMBINER_RESIZED: i32 = 18;
pub const COMBINER_HINDEXED_BLOCK: i32 = 19;

/// `MPI_ORDER_C` in MPICH's `mpi.h`, as `get_contents` returns it for subarrays.
pub const ORDER_C: i64 = 56;
/// `MPI_ORDER_FORTRAN` in MPICH's `mpi.h`.
pub const ORDER_FORTRAN: i64 = 57;

/// The name of a combiner constant (for messages).
pub fn combiner_name(combiner: i32) -> &'static str {
    match combiner {
        COMBINER_NAMED => "MPI_COMBINER_NAMED",
        COMBINER_DUP => "MPI_COMBINER_DUP",
        COMBINER_CONTIGUOUS => "MPI_COMBINER_CONTIGUOUS",
        COMBINER_VECTOR => "MPI_COMBINER_VECTOR",
        COMBINER_HVECTOR_INTEGER => "MPI_COMBINER_HVECTOR_INTEGER",
        COMBINER_HVECTOR => "MPI_COMBINER_HVECTOR",
        COMBINER_INDEXED => "MPI_COMBINER_INDEXED",
        COMBINER_HINDEXED_INTEGER => "MPI_COMBINER_HINDEXED_INTEGER",
        COMBINER_HINDEXED => "MPI_COMBINER_HINDEXED",
        COMBINER_INDEXED_BLOCK => "MPI_COMBINER_INDEXED_BLOCK",
        COMBINER_STRUCT_INTEGER => "MPI_COMBINER_STRUCT_INTEGER",
        COMBINER_STRUCT => "MPI_COMBINER_STRUCT",
        COMBINER_SUBARRAY => "MPI_COMBINER_SUBARRAY",
        COMBINER_DARRAY => "MPI_COMBINER_DARRAY",
        COMBINER_F90_REAL => "MPI_COMBINER_F90_REAL",
        COMBINER_F90_COMPLEX => "MPI_COMBINER_F90_COMPLEX",
        COMBINER_F90_INTEGER => "MPI_COMBINER_F90_INTEGER",
        COMBINER_RESIZED => "MPI_COMBINER_RESIZED",
        COMBINER_HINDEXED_BLOCK => "MPI_COMBINER_HINDEXED_BLOCK",
        _ => "unknown combiner",
    }
}

/// What `MPI_Type_get_envelope` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub num_integers: usize,
    pub num_addresses: usize,
    /// Non-zero only for a type built by a large-count constructor.
    pub num_large_counts: usize,
    pub num_datatypes: usize,
    pub combiner: i32,
}

/// What `MPI_Type_get_contents` returns: the constructor's arguments, in the order MPI gives
/// per combiner. Integers are `int` in C (the binding narrows them; types built through it fit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contents {
    pub integers: Vec<i64>,
    pub addresses: Vec<i64>,
    pub large_counts: Vec<i64>,
    pub datatypes: Vec<Datatype>,
}

impl Datatype {
    /// `MPI_Type_get_envelope`.
    pub fn envelope(&self) -> Envelope {
        let e = self.int_envelope();
        if !self.has_large_counts() {
            return e;
        }
        // Which integers stay integers (see the module's documentation).
        let kept = match &self.0.kind {
            Kind::Subarray { .. } => 2,
            Kind::Darray { args, .. } => e.num_integers - args.gsizes.len(),
            _ => 0,
        };
        Envelope {
            num_integers: kept,
            num_addresses: 0,
            num_large_counts: e.num_integers - kept + e.num_addresses,
            ..e
        }
    }

    /// The envelope as if every argument were an `int` or an address.
    fn int_envelope(&self) -> Envelope {
        let env = |i: usize, a: usize, d: usize, combiner| Envelope {
            num_integers: i,
            num_addresses: a,
            num_large_counts: 0,
            num_datatypes: d,
            combiner,
        };
        match &self.0.kind {
            Kind::Named(_) | Kind::Pair(..) => env(0, 0, 0, COMBINER_NAMED),
            Kind::Dup(_) => env(0, 0, 1, COMBINER_DUP),
            Kind::Contiguous { .. } => env(1, 0, 1, COMBINER_CONTIGUOUS),
            Kind::Vector { .. } => env(3, 0, 1, COMBINER_VECTOR),
            Kind::Hvector { .. } => env(2, 1, 1, COMBINER_HVECTOR),
            Kind::Indexed { displacements: d, .. } => env(2 * d.len() + 1, 0, 1, COMBINER_INDEXED),
            Kind::Hindexed { displacements: d, .. } => env(d.len() + 1, d.len(), 1, COMBINER_HINDEXED),
            Kind::IndexedBlock { displacements: d, .. } => env(d.len() + 2, 0, 1, COMBINER_INDEXED_BLOCK),
            Kind::HindexedBlock { displacements: d, .. } => env(2, d.len(), 1, COMBINER_HINDEXED_BLOCK),
            Kind::Struct { displacements: d, .. } => env(d.len() + 1, d.len(), d.len(), COMBINER_STRUCT),
            Kind::Subarray { sizes, .. } => env(3 * sizes.len() + 2, 0, 1, COMBINER_SUBARRAY),
            Kind::Resized { .. } => env(0, 2, 1, COMBINER_RESIZED),
            Kind::Darray { args, .. } => env(4 * args.gsizes.len() + 4, 0, 1, COMBINER_DARRAY),
            Kind::F90 { kind, p, .. } => env(1 + usize::from(p.is_some()), 0, 0, kind.combiner()),
        }
    }

    /// `MPI_Type_get_contents`; an error (`MPI_ERR_TYPE`) for a predefined type.
    pub fn contents(&self) -> Result<Contents> {
        let mut c = self.int_contents()?;
        if self.has_large_counts() {
            let mut large = match &self.0.kind {
                Kind::Subarray { .. } => {
                    // [ndims, sizes, subsizes, starts, order] -> [ndims, order] + the arrays.
                    let order = c.integers.pop().unwrap_or_default();
                    let arrays = c.integers.split_off(1);
                    c.integers.push(order);
                    arrays
                }
                Kind::Darray { args, .. } => c.integers.drain(3..3 + args.gsizes.len()).collect(),
                _ => std::mem::take(&mut c.integers),
            };
            large.append(&mut c.addresses);
            c.large_counts = large;
        }
        Ok(c)
    }

    /// The contents as if every argument were an `int` or an address.
    fn int_contents(&self) -> Result<Contents> {
        let c = |integers: Vec<i64>, addresses: Vec<i64>, datatypes: Vec<Datatype>| Contents {
            integers,
            addresses,
            large_counts: vec![],
            datatypes,
        };
        let len = |v: &Vec<i64>| v.len() as i64;
        Ok(match &self.0.kind {
            Kind::Named(_) | Kind::Pair(..) => {
                return Err(TypeError::ty("get_contents of a predefined datatype"));
            }
            Kind::Dup(old) => c(vec![], vec![], vec![old.clone()]),
            Kind::Contiguous { count, old } => c(vec![*count], vec![], vec![old.clone()]),
            Kind::Vector { count, blocklength, stride, old } => {
                c(vec![*count, *blocklength, *stride], vec![], vec![old.clone()])
            }
            Kind::Hvector { count, blocklength, stride, old } => {
                c(vec![*count, *blocklength], vec![*stride], vec![old.clone()])
            }
            Kind::Indexed { blocklengths, displacements, old } => {
                let ints = [&[len(blocklengths)][..], blocklengths, displacements].concat();
                c(ints, vec![], vec![old.clone()])
            }
            Kind::Hindexed { blocklengths, displacements, old } => {
                let ints = [&[len(blocklengths)][..], blocklengths].concat();
                c(ints, displacements.clone(), vec![old.clone()])
            }
            Kind::IndexedBlock { blocklength, displacements, old } => {
                let ints = [&[len(displacements), *blocklength][..], displacements].concat();
                c(ints, vec![], vec![old.clone()])
            }
            Kind::HindexedBlock { blocklength, displacements, old } => {
                c(vec![len(displacements), *blocklength], displacements.clone(), vec![old.clone()])
            }
            Kind::Struct { blocklengths, displacements, types } => {
                let ints = [&[len(blocklengths)][..], blocklengths].concat();
                c(ints, displacements.clone(), types.clone())
            }
            Kind::Subarray { sizes, subsizes, starts, order, old, .. } => {
                let order = match order {
                    Order::C => ORDER_C,
                    Order::Fortran => ORDER_FORTRAN,
                };
                let ints = [&[len(sizes)][..], sizes, subsizes, starts, &[order]].concat();
                c(ints, vec![], vec![old.clone()])
            }
            Kind::Resized { lb, extent, old } => c(vec![], vec![*lb, *extent], vec![old.clone()]),
            Kind::Darray { args: a, old, .. } => {
                let order = match a.order {
                    Order::C => ORDER_C,
                    Order::Fortran => ORDER_FORTRAN,
                };
                let distribs: Vec<i64> = a.distribs.iter().map(|d| d.code()).collect();
                let head = [a.size, a.rank, a.gsizes.len() as i64];
                let ints = [&head[..], &a.gsizes, &distribs, &a.dargs, &a.psizes, &[order]].concat();
                c(ints, vec![], vec![old.clone()])
            }
            Kind::F90 { p, r, .. } => c(p.iter().copied().chain([*r]).collect(), vec![], vec![]),
        })
    }
}
