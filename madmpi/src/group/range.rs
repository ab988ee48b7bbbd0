//! Subgroups by rank lists and range triplets: `MPI_Group_incl`, `_excl`, `_range_incl`,
//! `_range_excl`, with the error classes MPICH 4.0.2 reports.

use super::Group;
use crate::error::{Error, Result};

/// A range triplet `[first, last, stride]` as in `MPI_Group_range_incl` (the C layout
/// `int ranges[][3]`): ranks `first, first + stride, ...` not past `last`; the stride may be
/// negative, then `first >= last`.
pub type Range = [i32; 3];

impl Group {
    /// `MPI_Group_incl`: the processes of ranks `ranks`, in that order. A rank out of the group or
    /// repeated is an `MPI_ERR_RANK`. (MPICH 4.0.2 reports the first but accepts a repeated rank and
    /// builds a group with a process twice; the standard requires distinct ranks.)
    pub fn incl(&self, ranks: &[u32]) -> Result<Group> {
        let mut seen = vec![false; self.0.members.len()];
        let mut members = Vec::with_capacity(ranks.len().min(seen.len()));
        for &r in ranks {
            members.push(self.take(&mut seen, r, "MPI_Group_incl")?);
        }
        Ok(Group::from_distinct(members))
    }

    /// `MPI_Group_excl`: the processes whose ranks are not in `ranks`, in group order. A rank out of
    /// the group or repeated is an `MPI_ERR_RANK`. (MPICH 4.0.2 does not check repeats and returns a
    /// wrong group; the standard requires distinct ranks.)
    pub fn excl(&self, ranks: &[u32]) -> Result<Group> {
        let mut excluded = vec![false; self.0.members.len()];
        for &r in ranks {
            self.take(&mut excluded, r, "MPI_Group_excl")?;
        }
        Ok(self.keep_unmarked(&excluded))
    }

    /// `MPI_Group_range_incl`: the processes of the ranks the triplets list, in listed order. As in
    /// MPICH, every problem with a triplet is an `MPI_ERR_ARG`: a zero stride, `first` or `last`
    /// out of the group (even a `last` the stride never reaches), a stride going away from `last`,
    /// a rank listed twice (within or across triplets).
    pub fn range_incl(&self, ranges: &[Range]) -> Result<Group> {
        let mut seen = vec![false; self.0.members.len()];
        let mut members = Vec::new();
        for &range in ranges {
            for r in self.expand(range, &mut seen, "MPI_Group_range_incl")? {
                members.push(self.0.members[r]);
            }
        }
        Ok(Group::from_distinct(members))
    }

    /// `MPI_Group_range_excl`: the processes whose ranks the triplets do not list, in group order;
    /// errors as for [`Group::range_incl`].
    pub fn range_excl(&self, ranges: &[Range]) -> Result<Group> {
        let mut excluded = vec![false; self.0.members.len()];
        for &range in ranges {
            self.expand(range, &mut excluded, "MPI_Group_range_excl")?;
        }
        Ok(self.keep_unmarked(&excluded))
    }

    /// Marks rank `r` in `seen` and returns its process; `MPI_ERR_RANK` if out of range or seen.
    fn take(&self, seen: &mut [bool], r: u32, func: &str) -> Result<u32> {
        let Some(slot) = seen.get_mut(r as usize) else { return Err(self.bad_rank(func, r)) };
        if std::mem::replace(slot, true) {
            return Err(Error::rank(format!("{func}: rank {r} listed twice")));
        }
        Ok(self.0.members[r as usize])
    }

    /// The ranks of one triplet (marked in `seen`), after MPICH's checks.
    fn expand(&self, [first, last, stride]: Range, seen: &mut [bool], func: &str) -> Result<Vec<usize>> {
        let size = self.0.members.len() as i64;
        let (first, last, stride) = (i64::from(first), i64::from(last), i64::from(stride));
        let bad = |why: &str| Err(Error::arg(format!("{func}: range ({first}, {last}, {stride}) {why}")));
        if stride == 0 {
            return bad("has a zero stride");
        }
        if !(0..size).contains(&first) || !(0..size).contains(&last) {
            return bad(&format!("is out of the group (size {size})"));
        }
        if (stride > 0 && first > last) || (stride < 0 && first < last) {
            return bad("has a stride going away from its last rank");
        }
        let count = (last - first) / stride + 1;
        let mut ranks = Vec::with_capacity(count as usize);
        for i in 0..count {
            // In [0, size): between first and last, both in range.
            let r = (first + i * stride) as usize;
            if std::mem::replace(&mut seen[r], true) {
                return bad(&format!("lists rank {r} already listed"));
            }
            ranks.push(r);
        }
        Ok(ranks)
    }

    fn keep_unmarked(&self, marked: &[bool]) -> Group {
        let members = self.members().iter().zip(marked).filter(|(_, m)| !**m).map(|(w, _)| *w).collect();
        Group::from_distinct(members)
    }
}
