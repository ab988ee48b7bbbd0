//! The collectives over an [`Area`], on packed bytes: each is one call `c` of the area's
//! protocol (see `area`), flat — every member reads what it needs straight from the others'
//! buffers. Reductions combine the members' contributions in rank order, `x0 op (x1 op (… op
//! x(n−1)))`, the same way at every member, so an allreduce leaves the same bits everywhere
//! (MPI's advice) whatever the operation.
//!
//! Owns the steps of each call; the packing of the caller's memory is `shared`'s.

use super::area::{Area, Meanwhile};
use crate::error::Result;

/// Every member entered call `c`.
pub(crate) fn barrier(a: &Area, c: u64, m: &mut dyn Meanwhile) -> Result<()> {
    a.publish(c);
    a.wait_all(c, m)
}

/// `buf` of `root` to every member's `buf` (all of one length).
pub(crate) fn bcast(a: &Area, c: u64, root: u32, buf: &mut [u8], m: &mut dyn Meanwhile) -> Result<()> {
    if a.me() == root {
        a.wait_writable(c, m)?;
        a.write(c, buf);
    } else {
        a.wait(root, c, m)?;
        a.read(root, c, buf);
    }
    a.publish(c);
    Ok(())
}

/// `fold(x, acc)` sets `acc = x op acc` (an operation on the packed elements of one call).
pub(crate) type Fold<'a> = dyn Fn(&[u8], &mut [u8]) -> Result<()> + 'a;

/// Every member's input combined by `fold` (`fold(x, acc)` sets `acc = x op acc`) into `out`: at
/// every member (`root: None`, an allreduce) or at `root` only (`out` is ignored elsewhere).
/// The input is `input`, or `out` itself when `None` (in place); inputs have one length at
/// every member, and so has `out` where it receives.
pub(crate) fn reduce(
    a: &Area,
    c: u64,
    root: Option<u32>,
    input: Option<&[u8]>,
    out: &mut [u8],
    fold: &Fold<'_>,
    m: &mut dyn Meanwhile,
) -> Result<()> {
    let len = input.map_or(out.len(), <[u8]>::len);
    let me = a.me();
    let combines = root.is_none_or(|root| root == me);
    // A reduce's root reads its own input where it is (nobody else does); otherwise (an
    // allreduce, a non-root, a root in place) the input goes to our buffer.
    let own = match input {
        Some(i) if root.is_some() && combines => Some(i),
        _ => {
            a.wait_writable(c, m)?;
            a.write(c, input.unwrap_or(out));
            None
        }
    };
    a.publish(c);
    if !combines {
        return Ok(());
    }
    a.wait_all(c, m)?;
    let n = a.members();
    let of = |j: u32| match own {
        Some(i) if j == me => i,
        _ => a.data(j, c, len),
    };
    out.copy_from_slice(of(n - 1));
    for j in (0..n - 1).rev() {
        fold(of(j), out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::area::{self, Area, Meanwhile};
    use super::*;
    use crate::datatype::{Datatype, Predefined};
    use crate::node_shm::segment::{Segment, page_rounded};
    use crate::op::{Builtin, Op};

    struct Idle(bool);

    impl Meanwhile for Idle {
        fn look(&mut self) -> Result<()> {
            Ok(())
        }
        fn shared_cpu(&self) -> bool {
            self.0
        }
    }

    /// `n` threads, each a member with a mapping of its own of one segment, run `calls`
    /// collectives (mixed barriers, broadcasts, reduces and allreduces of 1 to 128 values, then
    /// hundreds of broadcasts from one root or reduces to one root, the others now and then
    /// late) and check every result: a member overwriting a buffer another still reads fails
    /// it.
    fn members_agree(n: u32, calls: u64, fenced: bool, shared_cpu: bool) {
        let len = page_rounded(area::len(n as usize));
        let (first, fd) = Segment::create(len).unwrap();
        let mut segs = vec![first];
        segs.extend((1..n).map(|_| Segment::attach(&fd, len).unwrap()));
        let threads: Vec<_> = segs
            .into_iter()
            .enumerate()
            .map(|(me, seg)| {
                std::thread::spawn(move || {
                    let me = me as u32;
                    let a = Area::new(seg, n, me, fenced);
                    let m = &mut Idle(shared_cpu);
                    let (sum, dtype) =
                        (Op::builtin(Builtin::Sum), Datatype::predefined(Predefined::UnsignedLongLong));
                    for c in 1..=calls {
                        // Blocks of 200 calls: mixed; broadcasts only; reduces to one root only
                        // (a root, or the others, running ahead through every buffer).
                        let block = c / 200;
                        let root = (block % u64::from(n)) as u32;
                        if me != root && c % 37 == 0 {
                            std::thread::sleep(std::time::Duration::from_micros(50));
                        }
                        let kind = match block % 3 {
                            0 => c % 4,
                            1 => 1,
                            _ => 2,
                        };
                        match kind {
                            0 => barrier(&a, c, m).unwrap(),
                            1 => {
                                let mut b = if me == root { c.to_le_bytes() } else { [0; 8] };
                                bcast(&a, c, root, &mut b, m).unwrap();
                                assert_eq!(u64::from_le_bytes(b), c, "bcast {c} at {me}");
                            }
                            k => {
                                let count = 1 + (c % 128) as usize;
                                let input: Vec<u8> = (0..count)
                                    .flat_map(|i| (c + i as u64 * u64::from(me)).to_le_bytes())
                                    .collect();
                                let mut out = vec![0u8; input.len()];
                                let at = (k == 2).then_some(root);
                                let fold = |i: &[u8], o: &mut [u8]| sum.reduce(i, o, count, &dtype);
                                reduce(&a, c, at, Some(&input), &mut out, &fold, m).unwrap();
                                if at.is_none_or(|r| r == me) {
                                    for i in 0..count {
                                        let got =
                                            u64::from_le_bytes(out[i * 8..i * 8 + 8].try_into().unwrap());
                                        let want: u64 = (0..u64::from(n)).map(|j| c + i as u64 * j).sum();
                                        assert_eq!(got, want, "call {c} element {i} at {me}");
                                    }
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn members_agree_through_the_buffers_with_asymmetric_barriers() {
        if !area::asymmetric_barriers() {
            eprintln!("membarrier refused here: fenced publishes only");
        }
        let fenced = !area::asymmetric_barriers();
        members_agree(2, 20_000, fenced, false);
        members_agree(3, 5_000, fenced, true);
    }

    #[test]
    fn members_agree_through_the_buffers_with_fenced_publishes() {
        members_agree(4, 5_000, true, false);
        members_agree(5, 2_000, true, true);
    }
}
