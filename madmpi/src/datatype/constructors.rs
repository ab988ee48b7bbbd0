//! Type constructors (`MPI_Type_contiguous`... `MPI_Type_create_subarray`, `MPI_Type_dup`):
//! argument checks, then attributes from `bounds`.
//!
//! This file owns the public constructors and the table of predefined types; how bounds and
//! padding are computed (MPICH's rules) lives in `bounds`.

use super::bounds::{
    block_indexed_bounds, contiguous_bounds, indexed_bounds, nonneg, same_len, struct_bounds, vector_bounds,
};
use super::error::{Checked, Result, TypeError};
use super::{Attrs, Datatype, Kind, Predefined};

/// Storage order of a subarray.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Row-major (`MPI_ORDER_C`): the last dimension varies fastest.
    C,
    /// Column-major (`MPI_ORDER_FORTRAN`): the first dimension varies fastest.
    Fortran,
}

impl Datatype {
    /// `MPI_Type_contiguous`.
    pub fn contiguous(count: i64, old: &Datatype) -> Result<Datatype> {
        nonneg(count, "count")?;
        let b = contiguous_bounds(count, old)?;
        Datatype::build(Kind::Contiguous { count, old: old.clone() }, b, old.alignment())
    }

    /// `MPI_Type_vector`: `count` blocks of `blocklength` elements, `stride` extents apart.
    pub fn vector(count: i64, blocklength: i64, stride: i64, old: &Datatype) -> Result<Datatype> {
        let b = vector_bounds(count, blocklength, stride.mul_(old.extent())?, old)?;
        Datatype::build(Kind::Vector { count, blocklength, stride, old: old.clone() }, b, old.alignment())
    }

    /// `MPI_Type_create_hvector`: as [`Datatype::vector`] with a stride in bytes.
    pub fn hvector(count: i64, blocklength: i64, stride: i64, old: &Datatype) -> Result<Datatype> {
        let b = vector_bounds(count, blocklength, stride, old)?;
        Datatype::build(Kind::Hvector { count, blocklength, stride, old: old.clone() }, b, old.alignment())
    }

    /// `MPI_Type_indexed`: blocks of `blocklengths[i]` elements at `displacements[i]` extents.
    pub fn indexed(blocklengths: &[i64], displacements: &[i64], old: &Datatype) -> Result<Datatype> {
        let b = indexed_bounds(blocklengths, displacements, old.extent(), old)?;
        let kind = Kind::Indexed {
            blocklengths: blocklengths.to_vec(),
            displacements: displacements.to_vec(),
            old: old.clone(),
        };
        Datatype::build(kind, b, old.alignment())
    }

    /// `MPI_Type_create_hindexed`: as [`Datatype::indexed`] with displacements in bytes.
    pub fn hindexed(blocklengths: &[i64], displacements: &[i64], old: &Datatype) -> Result<Datatype> {
        let b = indexed_bounds(blocklengths, displacements, 1, old)?;
        let kind = Kind::Hindexed {
            blocklengths: blocklengths.to_vec(),
            displacements: displacements.to_vec(),
            old: old.clone(),
        };
        Datatype::build(kind, b, old.alignment())
    }

    /// `MPI_Type_create_indexed_block`: blocks of `blocklength` elements at `displacements[i]`
    /// extents.
    pub fn indexed_block(blocklength: i64, displacements: &[i64], old: &Datatype) -> Result<Datatype> {
        let b = block_indexed_bounds(blocklength, displacements, old.extent(), old)?;
        let kind =
            Kind::IndexedBlock { blocklength, displacements: displacements.to_vec(), old: old.clone() };
        Datatype::build(kind, b, old.alignment())
    }

    /// `MPI_Type_create_hindexed_block`: as [`Datatype::indexed_block`] with displacements in
    /// bytes.
    pub fn hindexed_block(blocklength: i64, displacements: &[i64], old: &Datatype) -> Result<Datatype> {
        let b = block_indexed_bounds(blocklength, displacements, 1, old)?;
        let kind =
            Kind::HindexedBlock { blocklength, displacements: displacements.to_vec(), old: old.clone() };
        Datatype::build(kind, b, old.alignment())
    }

    /// `MPI_Type_create_struct`: blocks of `blocklengths[i]` elements of `types[i]` at
    /// `displacements[i]` bytes.
    pub fn create_struct(
        blocklengths: &[i64],
        displacements: &[i64],
        types: &[Datatype],
    ) -> Result<Datatype> {
        same_len(blocklengths.len(), types.len(), "struct")?;
        let (b, align) = struct_bounds(blocklengths, displacements, types)?;
        let kind = Kind::Struct {
            blocklengths: blocklengths.to_vec(),
            displacements: displacements.to_vec(),
            types: types.to_vec(),
        };
        Datatype::build(kind, b, align)
    }

    /// `MPI_Type_create_resized`: the same type map with bounds `lb` and `lb + extent`.
    pub fn resized(old: &Datatype, lb: i64, extent: i64) -> Result<Datatype> {
        lb.add_(extent)?;
        let attrs = Attrs { lb, extent, ..old.0.attrs };
        Ok(Datatype::new(Kind::Resized { lb, extent, old: old.clone() }, attrs))
    }

    /// `MPI_Type_dup`: a new type with the same type map and committed state (not the name).
    pub fn dup(&self) -> Datatype {
        let t = Datatype::new(Kind::Dup(self.clone()), self.0.attrs);
        if let Some(f) = self.0.flat.get() {
            let _ = t.0.flat.set(f.clone());
        }
        t
    }

    /// `MPI_Type_create_subarray`: the block `starts[i]..starts[i] + subsizes[i]` of an array of
    /// `sizes[i]` elements of `old`; the extent is the whole array.
    pub fn subarray(
        sizes: &[i64],
        subsizes: &[i64],
        starts: &[i64],
        order: Order,
        old: &Datatype,
    ) -> Result<Datatype> {
        let n = sizes.len();
        if n == 0 {
            return Err(TypeError::arg("subarray: ndims must be positive"));
        }
        same_len(n, subsizes.len(), "subarray")?;
        same_len(n, starts.len(), "subarray")?;
        for i in 0..n {
            let (size, sub, start) = (sizes[i], subsizes[i], starts[i]);
            if size < 1 || sub < 0 || sub > size || start < 0 || start > size - sub {
                return Err(TypeError::arg(format!(
                    "subarray: dimension {i} has size {size}, subsize {sub}, start {start}"
                )));
            }
        }
        // MPICH's decomposition (so that the bounds agree): the dimensions by increasing stride
        // make a vector then hvectors, placed by a one-block hindexed and resized to the array.
        let dims: Vec<usize> = match order {
            Order::C => (0..n).rev().collect(),
            Order::Fortran => (0..n).collect(),
        };
        let ext = old.extent();
        let mut t = if n == 1 {
            Datatype::contiguous(subsizes[dims[0]], old)?
        } else {
            Datatype::vector(subsizes[dims[1]], subsizes[dims[0]], sizes[dims[0]], old)?
        };
        let mut stride = sizes[dims[0]].mul_(ext)?;
        for k in 2..n {
            stride = stride.mul_(sizes[dims[k - 1]])?;
            t = Datatype::hvector(subsizes[dims[k]], 1, stride, &t)?;
        }
        let (mut disp, mut elems) = (starts[dims[0]], 1i64);
        for k in 1..n {
            elems = elems.mul_(sizes[dims[k - 1]])?;
            disp = disp.add_(elems.mul_(starts[dims[k]])?)?;
        }
        let total = elems.mul_(sizes[dims[n - 1]])?;
        let placed = Datatype::hindexed_block(1, &[disp.mul_(ext)?], &t)?;
        let body = Datatype::resized(&placed, 0, total.mul_(ext)?)?;
        let kind = Kind::Subarray {
            sizes: sizes.to_vec(),
            subsizes: subsizes.to_vec(),
            starts: starts.to_vec(),
            order,
            old: old.clone(),
            body: body.clone(),
        };
        Ok(Datatype::new(kind, body.0.attrs))
    }
}

/// The predefined types, in [`Predefined::ALL`] order, committed.
pub(super) fn predefined_table() -> Vec<Datatype> {
    let mut table: Vec<Datatype> = Vec::with_capacity(Predefined::ALL.len());
    for p in Predefined::ALL {
        let t = match p.pair() {
            None => {
                let size = p.size();
                let attrs = Attrs {
                    size,
                    lb: 0,
                    extent: size as i64,
                    true_lb: 0,
                    true_ub: size as i64,
                    align: p.alignment(),
                    elements: 1,
                    run: Some(0),
                };
                Datatype::new(Kind::Named(p), attrs)
            }
            Some([(a, da), (b, db)]) => {
                let types = [table[a.index()].clone(), table[b.index()].clone()];
                let (bounds, align) =
                    struct_bounds(&[1, 1], &[da, db], &types).expect("pair types are small");
                Datatype::build(Kind::Pair(p, types, [da, db]), bounds, align).expect("pair types are small")
            }
        };
        t.commit().expect("predefined types flatten");
        table.push(t);
    }
    table
}
