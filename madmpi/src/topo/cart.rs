//! Cartesian grids: `MPI_Dims_create`'s balanced factorisation, coordinates (row-major: the
//! last dimension varies fastest), ranks with periodic wrap, shifts, sub-grids and neighbours.
//!
//! Owns the grid arithmetic and the creation of Cartesian communicators; argument errors carry
//! MPICH 4.0's classes (`MPI_ERR_DIMS` for bad dimensions, `MPI_ERR_RANK` for a rank outside the
//! grid, `MPI_ERR_ARG` for coordinates outside a non-periodic dimension or a bad direction).

use super::Topology;
use crate::coll::neighbor::{Link, Links};
use crate::comm::Comm;
use crate::error::{Error, Result};
use std::sync::Arc;

/// A Cartesian grid: the extent of each dimension and whether it wraps around.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cart {
    dims: Vec<u32>,
    periods: Vec<bool>,
    /// The number of grid points (1 for no dimension), at most `i32::MAX`.
    size: u32,
}

impl Cart {
    /// A grid of `dims` (`periods[i]`: dimension i wraps around): `MPI_ERR_DIMS` for a negative
    /// extent or more points than an `int` counts, `MPI_ERR_ARG` if the lengths differ.
    pub fn new(dims: &[i32], periods: &[bool]) -> Result<Cart> {
        if dims.len() != periods.len() {
            return Err(Error::arg(format!("{} dimensions but {} periods", dims.len(), periods.len())));
        }
        let mut size: u32 = 1;
        for (i, &d) in dims.iter().enumerate() {
            let d = u32::try_from(d).map_err(|_| Error::dims(format!("dimension {i} has extent {d}")))?;
            size = size.checked_mul(d).filter(|&s| s <= i32::MAX as u32).ok_or_else(|| {
                Error::dims(format!("the grid {dims:?} has more points than an int counts"))
            })?;
        }
        Ok(Cart { dims: dims.iter().map(|&d| d as u32).collect(), periods: periods.to_vec(), size })
    }

    pub fn ndims(&self) -> usize {
        self.dims.len()
    }

    pub fn dims(&self) -> &[u32] {
        &self.dims
    }

    pub fn periods(&self) -> &[bool] {
        &self.periods
    }

    /// The number of grid points.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The coordinates of `rank` (`MPI_ERR_RANK` outside the grid).
    pub fn coords(&self, rank: u32) -> Result<Vec<u32>> {
        if rank >= self.size {
            return Err(Error::rank(format!("rank {rank} is outside the grid of {} points", self.size)));
        }
        let mut c = vec![0; self.ndims()];
        let mut r = rank;
        for i in (0..self.ndims()).rev() {
            c[i] = r % self.dims[i];
            r /= self.dims[i];
        }
        Ok(c)
    }

    /// The rank at `coords` (one per dimension), wrapped in periodic dimensions; `MPI_ERR_ARG`
    /// outside a non-periodic one.
    pub fn rank(&self, coords: &[i64]) -> Result<u32> {
        if coords.len() != self.ndims() {
            return Err(Error::arg(format!("{} coordinates for {} dimensions", coords.len(), self.ndims())));
        }
        let mut r: u32 = 0;
        for (i, &c) in coords.iter().enumerate() {
            let c = self.wrap(i, c).ok_or_else(|| {
                Error::arg(format!(
                    "coordinate {c} is outside non-periodic dimension {i} (extent {})",
                    self.dims[i]
                ))
            })?;
            r = r * self.dims[i] + c;
        }
        Ok(r)
    }

    /// Coordinate `c` of dimension `d` brought into `0..dims[d]`: wrapped if periodic, `None`
    /// outside otherwise.
    fn wrap(&self, d: usize, c: i64) -> Option<u32> {
        let n = i64::from(self.dims[d]);
        match self.periods[d] {
            _ if (0..n).contains(&c) => Some(c as u32),
            true if n > 0 => Some(c.rem_euclid(n) as u32),
            _ => None,
        }
    }

    /// The rank `disp` steps from `coords` along dimension `d` (`None`: off a non-periodic edge).
    fn neighbor(&self, coords: &[u32], d: usize, disp: i64) -> Option<u32> {
        let mut c: Vec<i64> = coords.iter().map(|&x| i64::from(x)).collect();
        c[d] = c[d].checked_add(disp)?;
        self.wrap(d, c[d])?;
        self.rank(&c).ok()
    }

    /// `MPI_Cart_shift`: (source, destination) of a shift of `me` by `disp` along `direction`
    /// (`None`: `MPI_PROC_NULL`). `MPI_ERR_TOPOLOGY` on a grid without dimensions (as MPICH),
    /// `MPI_ERR_ARG` for a direction outside the grid.
    pub fn shift(&self, me: u32, direction: i32, disp: i32) -> Result<(Option<u32>, Option<u32>)> {
        if self.ndims() == 0 {
            return Err(Error::topology("MPI_Cart_shift on a grid without dimensions"));
        }
        let d = usize::try_from(direction).ok().filter(|&d| d < self.ndims()).ok_or_else(|| {
            Error::arg(format!("direction {direction} of a grid of {} dimensions", self.ndims()))
        })?;
        let c = self.coords(me)?;
        Ok((self.neighbor(&c, d, -i64::from(disp)), self.neighbor(&c, d, i64::from(disp))))
    }

    /// `MPI_Cart_map`: the rank `rank` of a communicator of `size` processes would have in the
    /// grid (identity; `None`: `MPI_UNDEFINED`); `MPI_ERR_DIMS` if the grid is larger.
    pub fn map(&self, size: u32, rank: u32) -> Result<Option<u32>> {
        if self.size > size {
            return Err(Error::dims(format!("a grid of {} points for {size} processes", self.size)));
        }
        Ok((rank < self.size).then_some(rank))
    }

    /// Sources and destinations of `me`: per dimension the −1 then the +1 neighbour; the block
    /// sent towards +1 (destination 2d+1) arrives in the −1 slot (source 2d) of the receiver.
    pub(crate) fn links(&self, me: u32) -> Links {
        let Ok(c) = self.coords(me) else { return Links::default() };
        let mut links = Links::default();
        for d in 0..self.ndims() {
            for (k, disp) in [(2 * d, -1), (2 * d + 1, 1)] {
                let peer = self.neighbor(&c, d, disp);
                links.sources.push(Link { peer, step: (k ^ 1) as u32 });
                links.dests.push(Link { peer, step: k as u32 });
            }
        }
        links
    }
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the product of all is `nnodes`,
/// the filled entries in non-increasing order and as balanced as MPICH 4.0 makes them (among
/// the non-increasing factorisations, the one whose differences to the smallest, first entry
/// first, are lexicographically least; checked against MPICH for 2,900 inputs). Errors:
/// `MPI_ERR_ARG` for `nnodes` < 1, `MPI_ERR_DIMS` for a negative entry or fixed entries whose
/// product does not divide `nnodes`.
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    if nnodes < 1 {
        return Err(Error::arg(format!("MPI_Dims_create of {nnodes} nodes")));
    }
    let mut fixed: u64 = 1;
    for (i, &d) in dims.iter().enumerate() {
        if d < 0 {
            return Err(Error::dims(format!("dims[{i}] is {d}")));
        }
        if d > 0 {
            fixed = fixed.saturating_mul(d as u64);
        }
    }
    let n = nnodes as u64;
    if !n.is_multiple_of(fixed) {
        return Err(Error::dims(format!("{nnodes} nodes do not divide among the fixed dimensions {dims:?}")));
    }
    let free = dims.iter().filter(|&&d| d == 0).count();
    let mut filled = balanced(n / fixed, free).into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = filled.next().unwrap_or(1) as i32;
    }
    Ok(())
}

/// The most balanced non-increasing factorisation of `m` into `k` factors (see
/// [`dims_create`]): a depth-first search over the divisors of `m`, each factor from the
/// smallest that can still lead the rest (the k-th root of what is left) upwards, so that
/// balanced answers come first; cut where the factors chosen so far cannot beat the best found
/// (the last factor will be at most the k-th root of what is left).
fn balanced(m: u64, k: usize) -> Vec<u64> {
    if k == 0 {
        return Vec::new();
    }
    let mut divs: Vec<u64> =
        (1..).take_while(|d| d * d <= m).filter(|d| m.is_multiple_of(*d)).flat_map(|d| [d, m / d]).collect();
    divs.sort_unstable();
    divs.dedup();
    let mut s = Search { divs: &divs, best: None };
    s.go(m, k, m, &mut Vec::with_capacity(k));
    s.best.map(|b| b.1).unwrap_or_else(|| vec![1; k])
}

/// The largest x with x^k ≤ n.
fn root(n: u64, k: usize) -> u64 {
    let fits = |x: u64| (0..k).try_fold(1u64, |p, _| p.checked_mul(x)).is_some_and(|p| p <= n);
    let mut x = (n as f64).powf(1.0 / k as f64).round() as u64 + 1;
    while x > 1 && !fits(x) {
        x -= 1;
    }
    x.max(1)
}

/// The state of [`balanced`]'s search: the best factorisation so far, with its key (each
/// factor minus the last).
struct Search<'a> {
    divs: &'a [u64],
    best: Option<(Vec<u64>, Vec<u64>)>,
}

impl Search<'_> {
    /// Extends `acc` with `k` factors of product `rem`, each at most `hi`.
    fn go(&mut self, rem: u64, k: usize, hi: u64, acc: &mut Vec<u64>) {
        if let Some((best, _)) = &self.best {
            // The last factor will be at most root(rem, k): each key entry at least acc[i] − that.
            let last = root(rem, k);
            let bound = acc.iter().map(|&a| a.saturating_sub(last));
            if bound.cmp(best.iter().copied().take(acc.len())) == std::cmp::Ordering::Greater {
                return;
            }
        }
        if k == 1 {
            if rem <= hi {
                acc.push(rem);
                let key: Vec<u64> = acc.iter().map(|x| x - rem).collect();
                if self.best.as_ref().is_none_or(|(b, _)| key < *b) {
                    self.best = Some((key, acc.clone()));
                }
                acc.pop();
            }
            return;
        }
        for i in 0..self.divs.len() {
            let d = self.divs[i];
            if d > hi.min(rem) {
                break;
            }
            // The k − 1 factors left are at most d each: d must be large enough.
            let cap = (1..k).try_fold(1u64, |p, _| p.checked_mul(d));
            if !rem.is_multiple_of(d) || cap.is_some_and(|c| rem / d > c) {
                continue;
            }
            acc.push(d);
            self.go(rem / d, k - 1, d, acc);
            acc.pop();
        }
    }
}

impl Comm {
    /// `MPI_Cart_create` (collective): the first `grid.size()` ranks (in order: no reordering)
    /// form a communicator with the grid attached; the others get `None`. `MPI_ERR_ARG` if the
    /// grid has more points than the communicator has ranks.
    pub fn cart_create(&self, grid: Cart) -> Result<Option<Comm>> {
        if grid.size() > self.size() {
            return Err(Error::arg(format!(
                "a grid of {} points over a communicator of {}",
                grid.size(),
                self.size()
            )));
        }
        let member = self.rank() < grid.size();
        let c = self.split(member.then_some(0), self.rank() as i32)?;
        Ok(c.inspect(|c| c.attach_topology(Arc::new(Topology::Cart(grid)))))
    }

    /// `MPI_Cart_sub` (collective): the sub-grids keeping the dimensions where `remain` is true,
    /// each a communicator of the ranks differing only there; no dimension kept gives a grid of
    /// one point. `MPI_ERR_TOPOLOGY` without a Cartesian topology.
    pub fn cart_sub(&self, remain: &[bool]) -> Result<Comm> {
        let grid = self.cart()?;
        if remain.len() != grid.ndims() {
            return Err(Error::arg(format!("{} flags for {} dimensions", remain.len(), grid.ndims())));
        }
        let c = grid.coords(self.rank())?;
        // Color: the linear index of the coordinates in the dropped dimensions.
        let color = (0..grid.ndims()).filter(|&i| !remain[i]).fold(0u32, |a, i| a * grid.dims[i] + c[i]);
        let kept =
            |v: &[u32]| (0..grid.ndims()).filter(|&i| remain[i]).map(|i| v[i] as i32).collect::<Vec<_>>();
        let periods: Vec<bool> = (0..grid.ndims()).filter(|&i| remain[i]).map(|i| grid.periods[i]).collect();
        let sub = Cart::new(&kept(&grid.dims), &periods)?;
        let new = self.split(Some(color as i32), self.rank() as i32)?.expect("every rank has a color");
        new.attach_topology(Arc::new(Topology::Cart(sub)));
        Ok(new)
    }

    /// The Cartesian grid of this communicator (`MPI_ERR_TOPOLOGY` if it has none).
    pub fn cart(&self) -> Result<&Cart> {
        match self.topology().map(|t| &**t) {
            Some(Topology::Cart(c)) => Ok(c),
            _ => Err(Error::topology("the communicator has no Cartesian topology")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(n: i32, given: &[i32]) -> Vec<i32> {
        let mut d = given.to_vec();
        dims_create(n, &mut d).unwrap();
        d
    }

    /// The exhaustive reference: every factorisation of `m` into `k` non-increasing factors.
    fn all_factorisations(m: u64, k: usize, hi: u64) -> Vec<Vec<u64>> {
        if k == 0 {
            return if m == 1 { vec![vec![]] } else { vec![] };
        }
        (1..=hi.min(m))
            .filter(|d| m.is_multiple_of(*d))
            .flat_map(|d| {
                all_factorisations(m / d, k - 1, d).into_iter().map(move |mut v| {
                    v.insert(0, d);
                    v
                })
            })
            .collect()
    }

    #[test]
    fn dims_create_is_the_most_balanced_factorisation() {
        for n in 1..=120u64 {
            for k in 1..=4 {
                let all = all_factorisations(n, k, n);
                let key = |v: &Vec<u64>| v.iter().map(|x| x - v[k - 1]).collect::<Vec<_>>();
                let best = all.iter().min_by_key(|v| key(v)).unwrap();
                assert_eq!(&balanced(n, k), best, "n {n} k {k}");
            }
        }
        // MPICH 4.0's answers where balance alone leaves a choice.
        assert_eq!(dims(360, &[0, 0, 0]), [10, 6, 6]);
        assert_eq!(dims(168, &[0, 0, 0, 0]), [7, 4, 3, 2]);
        assert_eq!(dims(210, &[0; 5]), [7, 5, 3, 2, 1]);
        assert_eq!(dims(96, &[0, 2, 0, 0]), [4, 2, 4, 3]);
        assert_eq!(dims(1 << 30, &[0; 3]), [1024, 1024, 1024]);
        assert_eq!(dims(2147483647, &[0, 0]), [2147483647, 1], "a large prime");
        assert_eq!(dims(7, &[]), Vec::<i32>::new());
        // Highly composite inputs stay fast (MPICH's answers).
        let t = std::time::Instant::now();
        assert_eq!(dims(735134400, &[0; 4]), [170, 168, 165, 156]);
        assert_eq!(dims(735134400, &[0; 6]), [34, 33, 30, 30, 28, 26]);
        assert_eq!(dims(735134400, &[0; 8]), [17, 15, 14, 13, 12, 12, 11, 10]);
        assert!(dims(1 << 30, &[0; 30]).iter().all(|&d| d == 2));
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        let e = |n, d: &[i32]| dims_create(n, &mut d.to_vec()).unwrap_err().class();
        use crate::error::ErrorClass;
        assert_eq!(e(7, &[2, 0]), ErrorClass::Dims);
        assert_eq!(e(6, &[-1, 0]), ErrorClass::Dims);
        assert_eq!(e(-1, &[0]), ErrorClass::Arg);
    }

    #[test]
    fn coordinates_ranks_and_shifts() {
        let g = Cart::new(&[2, 3, 4], &[false, true, false]).unwrap();
        assert_eq!(g.size(), 24);
        for r in 0..24 {
            let c = g.coords(r).unwrap();
            assert_eq!(r, (c[0] * 3 + c[1]) * 4 + c[2]);
            let ci: Vec<i64> = c.iter().map(|&x| i64::from(x)).collect();
            assert_eq!(g.rank(&ci).unwrap(), r);
        }
        assert_eq!(g.coords(24).unwrap_err().class(), crate::error::ErrorClass::Rank);
        assert_eq!(g.rank(&[0, -1, 0]).unwrap(), g.rank(&[0, 2, 0]).unwrap(), "periodic wrap");
        assert_eq!(g.rank(&[0, 7, 0]).unwrap(), g.rank(&[0, 1, 0]).unwrap());
        assert_eq!(g.rank(&[2, 0, 0]).unwrap_err().class(), crate::error::ErrorClass::Arg);
        // rank 5 = (0, 1, 1).
        assert_eq!(g.shift(5, 0, 1).unwrap(), (None, Some(17)));
        assert_eq!(g.shift(5, 1, 1).unwrap(), (Some(1), Some(9)));
        assert_eq!(g.shift(5, 1, 4).unwrap(), (Some(1), Some(9)), "wraps modulo 3");
        assert_eq!(g.shift(5, 2, -2).unwrap(), (Some(7), None));
        assert_eq!(g.shift(5, 2, 0).unwrap(), (Some(5), Some(5)));
        assert_eq!(g.shift(5, 3, 1).unwrap_err().class(), crate::error::ErrorClass::Arg);
        let l = g.links(5);
        let peers = |v: &[Link]| v.iter().map(|l| l.peer).collect::<Vec<_>>();
        assert_eq!(peers(&l.sources), [None, Some(17), Some(1), Some(9), Some(4), Some(6)]);
        assert_eq!(peers(&l.dests), peers(&l.sources));
        // Destination k carries step k; source j expects its sender's opposite direction.
        let steps = |v: &[Link]| v.iter().map(|l| l.step).collect::<Vec<_>>();
        assert_eq!(steps(&l.dests), [0, 1, 2, 3, 4, 5]);
        assert_eq!(steps(&l.sources), [1, 0, 3, 2, 5, 4]);
        // A periodic dimension of extent 2: both neighbours are the same rank, told apart by step.
        let two = Cart::new(&[2], &[true]).unwrap().links(0);
        assert_eq!(peers(&two.sources), [Some(1), Some(1)]);
        assert_eq!(steps(&two.sources), [1, 0]);
        assert_eq!(Cart::new(&[-1], &[false]).unwrap_err().class(), crate::error::ErrorClass::Dims);
        assert_eq!(Cart::new(&[], &[]).unwrap().size(), 1);
    }
}
