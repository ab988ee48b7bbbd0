//! Attributes of derived types: bounds, true bounds, alignment, size and contiguity.
//!
//! Bounds follow MPICH 4.0.2 rather than the letter of MPI where they differ, so a type has the
//! same extent here as in the MPICH ABI programs we serve:
//! - a block of `bl` elements spans `extent * (bl - 1)` past one element, even when `bl == 0`
//!   (vector and (h)indexed_block with an empty block still get an extent);
//! - (h)indexed and struct members with a zero block length are ignored (but a member of size 0
//!   with a non-zero block length counts); a type of size 0 built from a type of size 0, a struct
//!   of size 0, and a type with count 0 or only empty blocks are the empty type (all attributes
//!   0), while a vector of empty blocks of a non-empty type keeps bounds;
//! - a struct whose members all have the same type is a hindexed type (no padding); otherwise its
//!   extent is rounded up to the largest alignment of its non-empty members (the MPI "epsilon"),
//!   whether or not a member was resized. "The same type" is MPICH's internal representation
//!   (yaksa): integers of one size are the same whatever their name, and constructors that change
//!   nothing (a count of 1, a dup, a resize to the same bounds...) give back their old type (see
//!   [`Representation`]).
//!
//! All arithmetic on sizes and offsets is checked ([`ErrorKind::Overflow`](super::ErrorKind::Overflow)).
//! This file computes attributes only: it never lists blocks (that is `flatten`'s job).

use super::error::{Checked, Result, TypeError, to_i64};
use super::parts::Parts;
use super::{Attrs, Datatype, Kind, Predefined};

/// Lower and upper bounds, with and without the markers.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bounds {
    lb: i64,
    ub: i64,
    true_lb: i64,
    true_ub: i64,
}

impl Bounds {
    fn union(self, o: Bounds) -> Bounds {
        Bounds {
            lb: self.lb.min(o.lb),
            ub: self.ub.max(o.ub),
            true_lb: self.true_lb.min(o.true_lb),
            true_ub: self.true_ub.max(o.true_ub),
        }
    }

    /// Moves the markers of an old type's bounds `(lb, ub)` to its true bounds.
    fn with_true(lb: i64, ub: i64, old: &Attrs) -> Result<Bounds> {
        let old_ub = old.lb.add_(old.extent)?;
        Ok(Bounds {
            lb,
            ub,
            true_lb: lb.add_(old.true_lb.sub_(old.lb)?)?,
            true_ub: ub.add_(old.true_ub.sub_(old_ub)?)?,
        })
    }
}

/// Bounds of `bl` elements of `old` from byte `disp`.
fn block(bl: i64, disp: i64, old: &Attrs) -> Result<Bounds> {
    let span = old.extent.mul_(bl - 1)?;
    let first_lb = old.lb.add_(disp)?;
    let first_ub = first_lb.add_(old.extent)?;
    let (lb, ub) =
        if old.extent >= 0 { (first_lb, first_ub.add_(span)?) } else { (first_lb.add_(span)?, first_ub) };
    Bounds::with_true(lb, ub, old)
}

/// Bounds of `count >= 1` blocks of `bl` elements of `old`, `stride` bytes apart.
fn strided(count: i64, bl: i64, stride: i64, old: &Attrs) -> Result<Bounds> {
    let reach = stride.mul_(count - 1)?;
    let span = old.extent.mul_(bl - 1)?;
    let (old_lb, old_ub) = (old.lb, old.lb.add_(old.extent)?);
    let (lb, ub) = match (stride >= 0, old.extent >= 0) {
        (true, true) => (old_lb, old_ub.add_(span)?.add_(reach)?),
        (false, true) => (old_lb.add_(reach)?, old_ub.add_(span)?),
        (true, false) => (old_lb.add_(span)?, old_ub.add_(reach)?),
        (false, false) => (old_lb.add_(span)?.add_(reach)?, old_ub),
    };
    Bounds::with_true(lb, ub, old)
}

/// Size, element count and run (see [`Attrs::run`]) of a sequence of parts.
pub(super) fn content(parts: &Parts) -> Result<(u64, u64, Option<i64>)> {
    // Where part (bl, disp, old) starts if it is one run of memory.
    fn part_run(bl: u64, disp: i64, old: &Datatype) -> Result<Option<i64>> {
        let a = &old.0.attrs;
        Ok(match a.run {
            Some(s) if bl == 1 || a.extent == to_i64(a.size)? => Some(disp.add_(s)?),
            _ => None,
        })
    }
    match *parts {
        Parts::Leaf => unreachable!("predefined types are built from the table"),
        Parts::Strided { count, bl, stride, old } => {
            let psize = bl.mul_(old.size())?;
            let size = count.mul_(psize)?;
            let elements = count.mul_(bl)?.mul_(old.num_elements())?;
            let run = if psize == 0 {
                Some(0)
            } else if count == 1 || stride == to_i64(psize)? {
                part_run(bl, 0, old)?
            } else {
                None
            };
            Ok((size, elements, run))
        }
        Parts::Listed { .. } => {
            let (mut size, mut elements) = (0u64, 0u64);
            // (start, end) of the run so far; `None` inside: not a run any more.
            let mut run: Option<Option<(i64, i64)>> = Some(None);
            for p in parts.iter() {
                let psize = p.bl.mul_(p.old.size())?;
                size = size.add_(psize)?;
                elements = elements.add_(p.bl.mul_(p.old.num_elements())?)?;
                if psize == 0 {
                    continue;
                }
                run = match (run, part_run(p.bl, p.disp, p.old)?) {
                    (Some(None), Some(s)) => Some(Some((s, s.add_(to_i64(psize)?)?))),
                    (Some(Some((s, e))), Some(s2)) if s2 == e => Some(Some((s, e.add_(to_i64(psize)?)?))),
                    _ => None,
                };
            }
            Ok((size, elements, run.map(|r| r.map_or(0, |(s, _)| s))))
        }
    }
}

/// What MPICH 4.0.2 (yaksa) builds a type as, for the struct padding rule: types with equal
/// representations are "the same type". Constructors that yaksa short-cuts to their old type
/// (contiguous(1), dup, a block of one element at displacement 0, a resize to the same bounds)
/// have its representation; other derived types are themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Representation {
    Predefined(Predefined),
    Derived(*const ()),
}

impl Datatype {
    pub(super) fn representation(&self) -> Representation {
        // One element of `old` at displacement 0, in the forms yaksa reduces to its old type.
        let unit = |count: i64, bl: i64, disp: Option<&i64>, old: &Datatype| {
            (count == 1 && bl == 1 && disp.is_none_or(|&d| d == 0)).then(|| old.representation())
        };
        let r = match &self.0.kind {
            Kind::Named(p) => Some(Representation::Predefined(p.representation())),
            Kind::Pair(p, ..) => Some(Representation::Predefined(*p)),
            Kind::Dup(old)
            | Kind::Subarray { body: old, .. }
            | Kind::Darray { body: old, .. }
            | Kind::F90 { base: old, .. } => Some(old.representation()),
            Kind::Contiguous { count, old } => unit(*count, 1, None, old),
            Kind::Vector { count, blocklength, old, .. } | Kind::Hvector { count, blocklength, old, .. } => {
                unit(*count, *blocklength, None, old)
            }
            Kind::Indexed { blocklengths: b, displacements: d, old }
            | Kind::Hindexed { blocklengths: b, displacements: d, old } => {
                unit(b.len() as i64, b.first().copied().unwrap_or(0), d.first(), old)
            }
            Kind::IndexedBlock { blocklength, displacements: d, old }
            | Kind::HindexedBlock { blocklength, displacements: d, old } => {
                unit(d.len() as i64, *blocklength, d.first(), old)
            }
            Kind::Struct { blocklengths: b, displacements: d, types } => {
                let first =
                    types.first().filter(|f| types.iter().all(|t| t.representation() == f.representation()));
                first.and_then(|f| unit(b.len() as i64, b[0], d.first(), f))
            }
            Kind::Resized { lb, extent, old } => {
                (*lb == old.lb() && *extent == old.extent()).then(|| old.representation())
            }
        };
        r.unwrap_or(Representation::Derived(std::sync::Arc::as_ptr(&self.0) as *const ()))
    }
}

pub(super) fn nonneg(v: i64, what: &str) -> Result<()> {
    if v < 0 { Err(TypeError::count(format!("negative {what} ({v})"))) } else { Ok(()) }
}

pub(super) fn same_len(a: usize, b: usize, what: &str) -> Result<()> {
    if a != b {
        Err(TypeError::arg(format!("{what}: arrays of different lengths ({a} and {b})")))
    } else {
        Ok(())
    }
}

impl Datatype {
    /// Builds a derived type from its bounds (`None`: the empty type) and alignment.
    pub(super) fn build(kind: Kind, b: Option<Bounds>, align: u64) -> Result<Datatype> {
        let Some(b) = b else { return Ok(Datatype::new(kind, Attrs::EMPTY)) };
        let (size, elements, run) = content(&Parts::of_kind(&kind))?;
        let attrs = Attrs {
            size,
            lb: b.lb,
            extent: b.ub.sub_(b.lb)?,
            true_lb: b.true_lb,
            true_ub: b.true_ub,
            align,
            elements,
            run,
        };
        Ok(Datatype::new(kind, attrs))
    }
}

pub(super) fn contiguous_bounds(count: i64, old: &Datatype) -> Result<Option<Bounds>> {
    nonneg(count, "count")?;
    if count == 0 || old.size() == 0 {
        return Ok(None);
    }
    block(count, 0, &old.0.attrs).map(Some)
}

pub(super) fn vector_bounds(count: i64, bl: i64, stride: i64, old: &Datatype) -> Result<Option<Bounds>> {
    nonneg(count, "count")?;
    nonneg(bl, "block length")?;
    // Every part's displacement must be representable, even for an empty type.
    stride.mul_(count.saturating_sub(1))?;
    if count == 0 || old.size() == 0 {
        return Ok(None);
    }
    strided(count, bl, stride, &old.0.attrs).map(Some)
}

/// Bounds of (h)indexed types; `unit` is the displacement unit in bytes.
pub(super) fn indexed_bounds(
    bls: &[i64],
    disps: &[i64],
    unit: i64,
    old: &Datatype,
) -> Result<Option<Bounds>> {
    same_len(bls.len(), disps.len(), "indexed")?;
    let mut b: Option<Bounds> = None;
    for (&bl, &d) in bls.iter().zip(disps) {
        nonneg(bl, "block length")?;
        let disp = d.mul_(unit)?;
        if bl == 0 || old.size() == 0 {
            continue;
        }
        let x = block(bl, disp, &old.0.attrs)?;
        b = Some(b.map_or(x, |b| b.union(x)));
    }
    Ok(b)
}

/// Bounds of (h)indexed_block types; `unit` is the displacement unit in bytes.
pub(super) fn block_indexed_bounds(
    bl: i64,
    disps: &[i64],
    unit: i64,
    old: &Datatype,
) -> Result<Option<Bounds>> {
    nonneg(bl, "block length")?;
    let mut b: Option<Bounds> = None;
    for &d in disps {
        let x = block(bl, d.mul_(unit)?, &old.0.attrs)?;
        b = Some(b.map_or(x, |b| b.union(x)));
    }
    Ok(if old.size() == 0 { None } else { b })
}

/// Bounds and alignment of a struct type.
pub(super) fn struct_bounds(bls: &[i64], disps: &[i64], types: &[Datatype]) -> Result<(Option<Bounds>, u64)> {
    same_len(bls.len(), disps.len(), "struct")?;
    let mut size = 0u64;
    for (&bl, t) in bls.iter().zip(types) {
        nonneg(bl, "block length")?;
        size = size.add_((bl as u64).mul_(t.size())?)?;
    }
    if size == 0 {
        return Ok((None, 0));
    }
    if let Some(first) = types.first()
        && types.iter().all(|t| t.representation() == first.representation())
    {
        return Ok((indexed_bounds(bls, disps, 1, first)?, first.alignment()));
    }
    let (mut b, mut align): (Option<Bounds>, u64) = (None, 0);
    for ((&bl, &disp), t) in bls.iter().zip(disps).zip(types) {
        nonneg(bl, "block length")?;
        if bl == 0 {
            continue;
        }
        let x = block(bl, disp, &t.0.attrs)?;
        b = Some(b.map_or(x, |b| b.union(x)));
        align = align.max(t.alignment());
    }
    if let Some(b) = &mut b
        && align > 0
    {
        // The "epsilon" of MPI: pad the extent to the alignment (C's remainder sign, as MPICH).
        let eps = b.ub.sub_(b.lb)? % to_i64(align)?;
        if eps != 0 {
            b.ub = b.ub.add_(to_i64(align)? - eps)?;
        }
    }
    Ok((b, align))
}
