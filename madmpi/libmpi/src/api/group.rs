//! Groups: `MPI_Group_size`, `MPI_Group_rank`, `MPI_Group_incl`, `MPI_Group_excl`,
//! `MPI_Group_range_incl`, `MPI_Group_range_excl`, `MPI_Group_union`,
//! `MPI_Group_intersection`, `MPI_Group_difference`, `MPI_Group_translate_ranks`,
//! `MPI_Group_compare`, `MPI_Group_free`. Local calls; errors go to `MPI_COMM_WORLD`'s handler.
//!
//! Checks in MPICH's order: groups (`MPI_ERR_GROUP`), a negative count (`MPI_ERR_ARG`), the
//! arrays and output pointers (`MPI_ERR_ARG`), then the ranks (`madmpi::group`'s rules).
//! Differences from MPICH 4.0.2 (`madmpi/tests/c/group_check.c`): a rank listed twice in
//! `incl`/`excl` is `MPI_ERR_RANK` here (MPICH builds a group with a process twice, or a wrong
//! one); null rank arrays are `MPI_ERR_ARG` here (MPICH crashes).

use crate::check;
use crate::export::export;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::error::Error;
use madmpi::group::{Group, GroupComparison, Peer, Range, Translated};
use std::ffi::c_int;

/// A count of array elements: `MPI_ERR_ARG` if negative (MPICH's class here).
fn count(n: c_int, what: &str) -> Result<usize, Error> {
    usize::try_from(n).map_err(|_| Error::arg(format!("negative number of {what} ({n})")))
}

/// Ranks from C: a negative one is `MPI_ERR_RANK`.
fn ranks(rs: &[c_int], g: &Group) -> Result<Vec<u32>, Error> {
    rs.iter()
        .map(|&r| {
            u32::try_from(r)
                .map_err(|_| Error::rank(format!("rank {r} out of range (group of size {})", g.size())))
        })
        .collect()
}

/// Writes the handle of `g` to `newgroup`.
///
/// # Safety
/// As [`check::out`].
unsafe fn publish(st: &State, g: Group, newgroup: *mut abi::Group) -> Result<(), Error> {
    // SAFETY: the caller's contract.
    let out = unsafe { check::out(newgroup, "newgroup") }?;
    *out = st.add_group(g)?;
    Ok(())
}

/// `MPI_Group_incl` or `_excl`.
///
/// # Safety
/// `rs` holds `n` ranks; `newgroup` as for [`check::out`].
unsafe fn subset(
    group: abi::Group,
    n: c_int,
    rs: *const c_int,
    newgroup: *mut abi::Group,
    op: fn(&Group, &[u32]) -> madmpi::error::Result<Group>,
) -> Result<(), Error> {
    let st = state()?;
    let g = st.group(group)?;
    // SAFETY: the caller's contract.
    let rs = unsafe { check::array_in(rs, count(n, "ranks")?, "ranks") }?;
    // SAFETY: as above.
    unsafe { check::out(newgroup, "newgroup") }?;
    let new = op(&g, &ranks(rs, &g)?)?;
    // SAFETY: as above.
    unsafe { publish(&st, new, newgroup) }
}

/// `MPI_Group_range_incl` or `_range_excl`.
///
/// # Safety
/// `ranges` holds `n` triplets; `newgroup` as for [`check::out`].
unsafe fn ranged(
    group: abi::Group,
    n: c_int,
    ranges: *const Range,
    newgroup: *mut abi::Group,
    op: fn(&Group, &[Range]) -> madmpi::error::Result<Group>,
) -> Result<(), Error> {
    let st = state()?;
    let g = st.group(group)?;
    // SAFETY: the caller's contract.
    let ranges = unsafe { check::array_in(ranges, count(n, "ranges")?, "ranges") }?;
    // SAFETY: as above.
    unsafe { check::out(newgroup, "newgroup") }?;
    let new = op(&g, ranges)?;
    // SAFETY: as above.
    unsafe { publish(&st, new, newgroup) }
}

/// `MPI_Group_union`, `_intersection` or `_difference`.
///
/// # Safety
/// `newgroup` as for [`check::out`].
unsafe fn combine(
    group1: abi::Group,
    group2: abi::Group,
    newgroup: *mut abi::Group,
    op: fn(&Group, &Group) -> Group,
) -> Result<(), Error> {
    let st = state()?;
    let (g1, g2) = (st.group(group1)?, st.group(group2)?);
    // SAFETY: the caller's contract.
    unsafe { publish(&st, op(&g1, &g2), newgroup) }
}

export! {
    /// `MPI_Group_size`.
    fn MPI_Group_size / PMPI_Group_size(group: abi::Group, size: *mut c_int) {
        let g = state()?.group(group)?;
        // SAFETY: an output argument.
        *unsafe { check::out(size, "size") }? = g.size() as c_int;
        Ok(())
    }

    /// `MPI_Group_rank`: the caller's rank in the group, `MPI_UNDEFINED` if not a member.
    fn MPI_Group_rank / PMPI_Group_rank(group: abi::Group, rank: *mut c_int) {
        let st = state()?;
        let g = st.group(group)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(rank, "rank") }?;
        let me = st.world.comm.rank();
        *out = g.rank_of(me).map_or(abi::MPI_UNDEFINED, |r| r as c_int);
        Ok(())
    }

    /// `MPI_Group_incl`: the processes of `ranks`, in that order.
    fn MPI_Group_incl / PMPI_Group_incl(group: abi::Group, n: c_int, ranks: *const c_int, newgroup: *mut abi::Group) {
        // SAFETY: `ranks` holds `n` ranks, `newgroup` is an output argument (MPI's contract).
        unsafe { subset(group, n, ranks, newgroup, Group::incl) }?;
        Ok(())
    }

    /// `MPI_Group_excl`: the processes not in `ranks`, in group order.
    fn MPI_Group_excl / PMPI_Group_excl(group: abi::Group, n: c_int, ranks: *const c_int, newgroup: *mut abi::Group) {
        // SAFETY: as in MPI_Group_incl.
        unsafe { subset(group, n, ranks, newgroup, Group::excl) }?;
        Ok(())
    }

    /// `MPI_Group_range_incl`: the ranks of the `(first, last, stride)` triplets, in order.
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: abi::Group, n: c_int, ranges: *mut Range, newgroup: *mut abi::Group) {
        // SAFETY: `ranges` holds `n` triplets (read only), `newgroup` is an output argument.
        unsafe { ranged(group, n, ranges, newgroup, Group::range_incl) }?;
        Ok(())
    }

    /// `MPI_Group_range_excl`: the ranks the triplets do not list, in group order.
    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: abi::Group, n: c_int, ranges: *mut Range, newgroup: *mut abi::Group) {
        // SAFETY: as in MPI_Group_range_incl.
        unsafe { ranged(group, n, ranges, newgroup, Group::range_excl) }?;
        Ok(())
    }

    /// `MPI_Group_union`.
    fn MPI_Group_union / PMPI_Group_union(group1: abi::Group, group2: abi::Group, newgroup: *mut abi::Group) {
        // SAFETY: an output argument.
        unsafe { combine(group1, group2, newgroup, Group::union) }?;
        Ok(())
    }

    /// `MPI_Group_intersection`.
    fn MPI_Group_intersection / PMPI_Group_intersection(group1: abi::Group, group2: abi::Group, newgroup: *mut abi::Group) {
        // SAFETY: an output argument.
        unsafe { combine(group1, group2, newgroup, Group::intersection) }?;
        Ok(())
    }

    /// `MPI_Group_difference`.
    fn MPI_Group_difference / PMPI_Group_difference(group1: abi::Group, group2: abi::Group, newgroup: *mut abi::Group) {
        // SAFETY: an output argument.
        unsafe { combine(group1, group2, newgroup, Group::difference) }?;
        Ok(())
    }

    /// `MPI_Group_translate_ranks`: each rank's rank in `group2`, `MPI_UNDEFINED` if absent;
    /// `MPI_PROC_NULL` stays itself.
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(
        group1: abi::Group,
        n: c_int,
        ranks1: *const c_int,
        group2: abi::Group,
        ranks2: *mut c_int,
    ) {
        let st = state()?;
        let g1 = st.group(group1)?;
        let n = count(n, "ranks")?;
        // SAFETY: `ranks1` holds `n` ranks (MPI's contract); copied before `ranks2` is written,
        // so the two may even be the same array.
        let rs = unsafe { check::array_in(ranks1, n, "ranks1") }?.to_vec();
        let g2 = st.group(group2)?;
        if n == 0 {
            return Ok(());
        }
        // SAFETY: `ranks2` has room for `n` ranks (MPI's contract).
        let out = unsafe { check::array(ranks2, n, "ranks2") }?;
        let peers: Vec<Peer> = rs
            .iter()
            .map(|&r| match r {
                abi::MPI_PROC_NULL => Ok(Peer::ProcNull),
                _ => u32::try_from(r).map(Peer::Rank).map_err(|_| {
                    Error::rank(format!(
                        "MPI_Group_translate_ranks: rank {r} out of range (group of size {})",
                        g1.size()
                    ))
                }),
            })
            .collect::<Result<_, _>>()?;
        for (o, t) in out.iter_mut().zip(g1.translate_ranks(&peers, &g2)?) {
            *o = match t {
                Translated::Rank(r) => r as c_int,
                Translated::ProcNull => abi::MPI_PROC_NULL,
                Translated::Undefined => abi::MPI_UNDEFINED,
            };
        }
        Ok(())
    }

    /// `MPI_Group_compare`: `MPI_IDENT`, `MPI_SIMILAR` or `MPI_UNEQUAL`.
    fn MPI_Group_compare / PMPI_Group_compare(group1: abi::Group, group2: abi::Group, result: *mut c_int) {
        let st = state()?;
        let (g1, g2) = (st.group(group1)?, st.group(group2)?);
        // SAFETY: an output argument.
        *unsafe { check::out(result, "result") }? = match g1.compare(&g2) {
            GroupComparison::Ident => abi::MPI_IDENT,
            GroupComparison::Similar => abi::MPI_SIMILAR,
            GroupComparison::Unequal => abi::MPI_UNEQUAL,
        };
        Ok(())
    }

    /// `MPI_Group_free`: sets the handle to `MPI_GROUP_NULL` (`MPI_GROUP_EMPTY` may be freed,
    /// as in MPICH: the group calls hand it out).
    fn MPI_Group_free / PMPI_Group_free(group: *mut abi::Group) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(group, "group") }?;
        st.free_group(*h)?;
        *h = abi::MPI_GROUP_NULL;
        Ok(())
    }
}
