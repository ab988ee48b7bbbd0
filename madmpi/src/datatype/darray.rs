//! `MPI_Type_create_darray`: the part of a global array that one process of a process grid owns
//! under block, cyclic or no distribution in each dimension.
//!
//! The type is built as MPICH 4.0.2 builds it (so that bounds, padding and envelopes agree): one
//! dimension after the other, fastest first, a contiguous or hvector (block) or an hvector plus
//! a remainder struct (cyclic) of the previous type, resized to span the dimension; then the
//! start offset placed by a one-block hindexed and the whole resized to the global array. This
//! file owns the distribution rules and their argument checks; attributes come from the
//! constructors it calls.

use super::constructors::Order;
use super::error::{Checked, Result, TypeError};
use super::{Datatype, Kind};

/// `MPI_DISTRIBUTE_DFLT_DARG` in MPICH's `mpi.h`: the default distribution argument.
pub const DISTRIBUTE_DFLT_DARG: i64 = -49767;

/// How one dimension is distributed over its processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// `MPI_DISTRIBUTE_BLOCK`: one block of `darg` (default: ceil(gsize / procs)) per process.
    Block,
    /// `MPI_DISTRIBUTE_CYCLIC`: blocks of `darg` (default 1) dealt round-robin.
    Cyclic,
    /// `MPI_DISTRIBUTE_NONE`: not distributed. MPI wants 1 process in such a dimension; MPICH
    /// 4.0.2 accepts more, and then in C order block-distributes the dimension over them (in
    /// Fortran order every process has all of it): so does this engine.
    None,
}

impl Distribution {
    /// MPICH's `MPI_DISTRIBUTE_BLOCK`, `_CYCLIC` and `_NONE` values, as `get_contents` returns.
    pub const fn code(self) -> i64 {
        match self {
            Distribution::Block => 121,
            Distribution::Cyclic => 122,
            Distribution::None => 123,
        }
    }

    /// The distribution of MPICH's value `code`.
    pub fn from_code(code: i64) -> Option<Distribution> {
        [Distribution::Block, Distribution::Cyclic, Distribution::None].into_iter().find(|d| d.code() == code)
    }
}

/// The arguments of a darray type, as `get_contents` returns them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Darray {
    pub size: i64,
    pub rank: i64,
    pub gsizes: Vec<i64>,
    pub distribs: Vec<Distribution>,
    pub dargs: Vec<i64>,
    pub psizes: Vec<i64>,
    pub order: Order,
}

impl Darray {
    /// MPI's conditions on the arguments (`MPI_ERR_ARG`, as MPICH): a grid of `size` processes
    /// that holds `rank` (MPICH 4.0.2 does not check the grid's size; Open MPI does), positive
    /// sizes, valid distribution arguments.
    fn check(&self) -> Result<()> {
        let n = self.gsizes.len();
        if n == 0 {
            return Err(TypeError::arg("darray: ndims must be positive"));
        }
        if [self.distribs.len(), self.dargs.len(), self.psizes.len()].iter().any(|&l| l != n) {
            return Err(TypeError::arg("darray: arrays of different lengths"));
        }
        if self.size < 1 || self.rank < 0 || self.rank >= self.size {
            return Err(TypeError::arg(format!(
                "darray: rank {} in a grid of size {}",
                self.rank, self.size
            )));
        }
        let mut procs = 1i64;
        for i in 0..n {
            let (g, p, d) = (self.gsizes[i], self.psizes[i], self.dargs[i]);
            if g < 1 || p < 1 {
                return Err(TypeError::arg(format!("darray: dimension {i} has gsize {g} and psize {p}")));
            }
            if d < 1 && d != DISTRIBUTE_DFLT_DARG {
                return Err(TypeError::arg(format!(
                    "darray: invalid distribution argument {d} in dimension {i}"
                )));
            }
            match self.distribs[i] {
                Distribution::Block if d != DISTRIBUTE_DFLT_DARG && d.mul_(p)? < g => {
                    return Err(TypeError::arg(format!(
                        "darray: {p} blocks of {d} do not cover the {g} elements of dimension {i}"
                    )));
                }
                _ => {}
            }
            procs = procs.mul_(p)?;
        }
        if procs != self.size {
            return Err(TypeError::arg(format!("darray: the grid has {procs} processes, not {}", self.size)));
        }
        Ok(())
    }

    /// This process's coordinates in the grid (row-major, whatever the array order).
    fn coords(&self) -> Vec<i64> {
        let (mut procs, mut r) = (self.size, self.rank);
        self.psizes
            .iter()
            .map(|&p| {
                procs /= p;
                let c = r / procs;
                r %= procs;
                c
            })
            .collect()
    }

    /// The dimensions from fastest- to slowest-varying.
    fn fastest_first(&self) -> Vec<usize> {
        let n = self.gsizes.len();
        match self.order {
            Order::C => (0..n).rev().collect(),
            Order::Fortran => (0..n).collect(),
        }
    }

    /// Bytes between consecutive elements of dimension `dim` (the product of the faster
    /// dimensions' sizes, times the extent).
    fn stride(&self, dim: usize, extent: i64) -> Result<i64> {
        let faster: Vec<usize> = self.fastest_first().into_iter().take_while(|&d| d != dim).collect();
        faster.iter().try_fold(extent, |s, &d| s.mul_(self.gsizes[d]))
    }
}

impl Datatype {
    /// `MPI_Type_create_darray`: the elements of `old` that process `args.rank` owns in the
    /// global array `args.gsizes`, in array order; the extent is the whole global array.
    pub fn darray(args: Darray, old: &Datatype) -> Result<Datatype> {
        args.check()?;
        let coords = args.coords();
        let ext = old.extent();
        let order = args.fastest_first();
        let mut t = old.clone();
        // Start offset of each dimension, in elements of that dimension.
        let mut offsets = vec![0i64; args.gsizes.len()];
        for (k, &dim) in order.iter().enumerate() {
            let (p, c, d) = (args.psizes[dim], coords[dim], args.dargs[dim]);
            let (next, off) = match args.distribs[dim] {
                Distribution::Block => block(&args, dim, k == 0, p, c, d, ext, &t)?,
                Distribution::None if args.order == Order::Fortran => {
                    block(&args, dim, k == 0, 1, 0, DISTRIBUTE_DFLT_DARG, ext, &t)?
                }
                Distribution::None => block(&args, dim, k == 0, p, c, DISTRIBUTE_DFLT_DARG, ext, &t)?,
                Distribution::Cyclic => cyclic(&args, dim, k == 0, p, c, d, ext, &t)?,
            };
            // Each dimension's type spans its whole dimension of the previous type, so that the
            // elements of the next dimension's blocks are one row apart (MPICH does the same).
            t = Datatype::resized(&next, 0, args.gsizes[dim].mul_(t.extent())?)?;
            offsets[dim] = off;
        }
        let (mut disp, mut elems) = (0i64, 1i64);
        for &dim in &order {
            disp = disp.add_(elems.mul_(offsets[dim])?)?;
            elems = elems.mul_(args.gsizes[dim])?;
        }
        let placed = Datatype::hindexed_block(1, &[disp.mul_(ext)?], &t)?;
        let body = Datatype::resized(&placed, 0, elems.mul_(ext)?)?;
        let attrs = body.0.attrs;
        Ok(Datatype::new(Kind::Darray { args, old: old.clone(), body }, attrs))
    }
}

/// Dimension `dim` block-distributed: the type and its start offset (in elements).
#[allow(clippy::too_many_arguments)]
fn block(
    a: &Darray,
    dim: usize,
    fastest: bool,
    procs: i64,
    coord: i64,
    darg: i64,
    ext: i64,
    old: &Datatype,
) -> Result<(Datatype, i64)> {
    let g = a.gsizes[dim];
    let blksize = if darg == DISTRIBUTE_DFLT_DARG { g.add_(procs - 1)? / procs } else { darg };
    let mine = blksize.min(g.sub_(blksize.mul_(coord)?)?).max(0);
    let t = if fastest {
        Datatype::contiguous(mine, old)?
    } else {
        Datatype::hvector(mine, 1, a.stride(dim, ext)?, old)?
    };
    let offset = if mine == 0 { 0 } else { blksize.mul_(coord)? };
    Ok((t, offset))
}

/// Dimension `dim` cyclically distributed: the type and its start offset (in elements; 0 for
/// the fastest dimension, whose offset the type itself carries).
#[allow(clippy::too_many_arguments)]
fn cyclic(
    a: &Darray,
    dim: usize,
    fastest: bool,
    procs: i64,
    coord: i64,
    darg: i64,
    ext: i64,
    old: &Datatype,
) -> Result<(Datatype, i64)> {
    let blksize = if darg == DISTRIBUTE_DFLT_DARG { 1 } else { darg };
    let first = coord.mul_(blksize)?;
    let last = a.gsizes[dim] - 1;
    let local = if last < first {
        0
    } else {
        let span = last - first + 1;
        let round = procs.mul_(blksize)?;
        span / round * blksize + (span % round).min(blksize)
    };
    let (count, rem) = (local / blksize, local % blksize);
    let stride = procs.mul_(blksize)?.mul_(a.stride(dim, ext)?)?;
    let mut t = Datatype::hvector(count, blksize, stride, old)?;
    if rem != 0 {
        // The last, shorter block: a struct of the full blocks and `rem` elements.
        t = Datatype::create_struct(&[1, rem], &[0, count.mul_(stride)?], &[t, old.clone()])?;
    }
    if fastest {
        // The first dimension places itself and spans the whole dimension.
        let placed = Datatype::hindexed_block(1, &[first.mul_(ext)?], &t)?;
        t = Datatype::resized(&placed, 0, ext.mul_(a.gsizes[dim])?)?;
        return Ok((t, 0));
    }
    Ok((t, if local == 0 { 0 } else { first }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{ErrorKind, Predefined};

    fn args(size: i64, rank: i64, dims: &[(i64, Distribution, i64, i64)], order: Order) -> Darray {
        Darray {
            size,
            rank,
            gsizes: dims.iter().map(|d| d.0).collect(),
            distribs: dims.iter().map(|d| d.1).collect(),
            dargs: dims.iter().map(|d| d.2).collect(),
            psizes: dims.iter().map(|d| d.3).collect(),
            order,
        }
    }

    /// The committed blocks of one element, and the extent.
    fn map(a: Darray) -> (Vec<(isize, usize)>, i64) {
        let t = Datatype::darray(a, &Datatype::predefined(Predefined::Int)).unwrap();
        t.commit().unwrap();
        (t.blocks().unwrap().to_vec(), t.extent())
    }

    use Distribution::{Block, Cyclic, None as Undistributed};
    const DFLT: i64 = DISTRIBUTE_DFLT_DARG;

    #[test]
    fn block_block_in_c_order() {
        // A 4x6 int array on a 2x2 grid: rank 3 owns rows 2-3, columns 3-5.
        let a = args(4, 3, &[(4, Block, DFLT, 2), (6, Block, DFLT, 2)], Order::C);
        assert_eq!(map(a), (vec![(60, 12), (84, 12)], 96));
        // Rank 0 owns rows 0-1, columns 0-2.
        let a = args(4, 0, &[(4, Block, DFLT, 2), (6, Block, DFLT, 2)], Order::C);
        assert_eq!(map(a), (vec![(0, 12), (24, 12)], 96));
    }

    #[test]
    fn cyclic_blocks_with_a_short_last_block() {
        // 10 ints dealt in blocks of 2 to 3 processes: rank 1 has 2-3 and 8-9.
        assert_eq!(map(args(3, 1, &[(10, Cyclic, 2, 3)], Order::C)), (vec![(8, 8), (32, 8)], 40));
        // 9 ints, blocks of 2, 2 processes: rank 0 has 0-1, 4-5 and 8 (a short block).
        assert_eq!(map(args(2, 0, &[(9, Cyclic, 2, 2)], Order::C)), (vec![(0, 8), (16, 8), (32, 4)], 36));
        // The default cyclic argument is 1.
        assert_eq!(map(args(2, 1, &[(4, Cyclic, DFLT, 2)], Order::C)), (vec![(4, 4), (12, 4)], 16));
    }

    #[test]
    fn fortran_order_and_undistributed_dimensions() {
        // A 3x2 Fortran array (dimension 0 fastest), columns dealt to 2 processes: rank 1 owns
        // column 1, elements 3 to 5.
        let a = args(2, 1, &[(3, Undistributed, DFLT, 1), (2, Cyclic, DFLT, 2)], Order::Fortran);
        assert_eq!(map(a), (vec![(12, 12)], 24));
        // The same in C order: row 1 of a 3x2 array is not what rank 1 owns; column 1 is.
        let a = args(2, 1, &[(3, Undistributed, DFLT, 1), (2, Cyclic, DFLT, 2)], Order::C);
        assert_eq!(map(a), (vec![(4, 4), (12, 4), (20, 4)], 24));
    }

    #[test]
    fn invalid_grids_and_arguments_are_errors() {
        let int = Datatype::predefined(Predefined::Int);
        let bad = [
            args(3, 0, &[(4, Block, DFLT, 2)], Order::C), // 2 processes, not 3
            args(2, 2, &[(4, Block, DFLT, 2)], Order::C), // rank outside the grid
            args(2, 0, &[(5, Block, 2, 2)], Order::C),    // 2 blocks of 2 < 5
            args(2, 0, &[(4, Cyclic, 0, 2)], Order::C),   // darg 0
            args(1, 0, &[(0, Block, DFLT, 1)], Order::C), // empty dimension
            args(1, 0, &[], Order::C),                    // no dimension
        ];
        for a in bad {
            let e = Datatype::darray(a.clone(), &int).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Arg, "{a:?}");
        }
        // An undistributed dimension on 2 processes: block-distributed in C order (MPICH's
        // reading), whole in Fortran order.
        let a = args(2, 1, &[(4, Undistributed, DFLT, 2)], Order::C);
        assert_eq!(map(a), (vec![(8, 8)], 16));
        let a = args(2, 1, &[(4, Undistributed, DFLT, 2)], Order::Fortran);
        assert_eq!(map(a), (vec![(0, 16)], 16));
        assert_eq!(Distribution::from_code(122), Some(Cyclic));
        assert_eq!(Distribution::from_code(7), None);
    }
}
