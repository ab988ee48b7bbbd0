//! The reverse index of a group (world rank -> local rank), chosen by the group's shape so that
//! `rank_of` stays O(1) or O(log n) for large groups without costing memory for small ones.

/// Groups up to this size are searched linearly: cheaper than any index at that size.
const LINEAR_MAX: usize = 16;

pub(super) enum Index {
    /// Members are `first, first + 1, ...` (world and most communicator groups): arithmetic.
    Contiguous { first: u32 },
    /// Small group: scan the members.
    Linear,
    /// `(world rank, local rank)` sorted by world rank: binary search.
    Sorted(Box<[(u32, u32)]>),
}

impl Index {
    /// The index of distinct members (fewer than 2^32 of them).
    pub(super) fn build_distinct(members: &[u32]) -> Index {
        let first = members.first().copied().unwrap_or(0);
        let contiguous =
            members.iter().enumerate().all(|(i, &w)| u64::from(w) == u64::from(first) + i as u64);
        if contiguous {
            Index::Contiguous { first }
        } else if members.len() <= LINEAR_MAX {
            Index::Linear
        } else {
            Index::Sorted(sorted(members))
        }
    }

    /// The index of members that may repeat: `Err(w)` names a repeated process.
    pub(super) fn build(members: &[u32]) -> Result<Index, u32> {
        let pairs = sorted(members);
        if let Some(pair) = pairs.windows(2).find(|p| p[0].0 == p[1].0) {
            return Err(pair[0].0);
        }
        Ok(Index::build_distinct(members))
    }

    pub(super) fn rank_of(&self, members: &[u32], world: u32) -> Option<u32> {
        match self {
            Index::Contiguous { first } => {
                let r = world.checked_sub(*first)?;
                ((r as usize) < members.len()).then_some(r)
            }
            Index::Linear => members.iter().position(|&w| w == world).map(|r| r as u32),
            Index::Sorted(pairs) => pairs.binary_search_by_key(&world, |p| p.0).ok().map(|i| pairs[i].1),
        }
    }
}

fn sorted(members: &[u32]) -> Box<[(u32, u32)]> {
    let mut pairs: Vec<(u32, u32)> = members.iter().enumerate().map(|(r, &w)| (w, r as u32)).collect();
    pairs.sort_unstable();
    pairs.into()
}
