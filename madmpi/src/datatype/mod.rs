//! MPI datatypes (MPI-3.1 chapter 4): the type constructors, their attributes, commit
//! (flattening), nmad layouts, pack/unpack, envelopes/contents and element counts.
//!
//! This module owns the datatype engine in pure Rust: it computes every attribute as MPICH 4.0.2
//! does (including its padding rule for struct types) and describes `count` elements of a
//! committed type to nmad as a lazy [`Layout`](nmad::Layout), so non-contiguous data travels
//! without intermediate copies. It must not know MPI handle values or error class numbers (the C
//! binding maps [`Predefined`] and [`ErrorKind`] to them), nor reach into nmad beyond the
//! `Layout` trait.
//!
//! Layout of the module: [`predefined`](Predefined) types; `constructors` (validation) and
//! `bounds` (attributes, MPICH's rules); `darray` (distributed arrays); `f90` (the types of
//! `MPI_Type_create_f90_*` and `MPI_Type_match_size`); `parts` (the normal form every type
//! reduces to); `flatten` (commit); [`layout`](TypeLayout); `pack`; `external32` (the portable
//! representation of `MPI_Pack_external`); `envelope` (`get_envelope`, `get_contents`, also in
//! their large-count forms); `signature` (`MPI_Get_elements`, `MPI_Get_count`); `equivalence`
//! (the Rust types that map to predefined types, [`Equivalence`]).
//!
//! ```
//! use madmpi::datatype::{Datatype, Predefined};
//! let int = Datatype::predefined(Predefined::Int);
//! let column = Datatype::vector(4, 1, 5, &int).unwrap(); // a column of a 4x5 int matrix
//! assert_eq!((column.size(), column.extent()), (16, 64));
//! column.commit().unwrap();
//! assert_eq!(column.blocks().unwrap().len(), 4);
//! ```

mod bounds;
mod constructors;
mod darray;
mod envelope;
mod equivalence;
mod error;
mod external32;
mod f90;
mod flatten;
mod layout;
mod pack;
mod parts;
mod predefined;
mod signature;

pub use constructors::Order;
pub use darray::{DISTRIBUTE_DFLT_DARG, Darray, Distribution};
pub use envelope::*;
pub use equivalence::Equivalence;
pub use error::{ErrorKind, Result, TypeError};
pub use f90::{F90Kind, TypeClass};
pub use layout::TypeLayout;
pub use predefined::Predefined;

use flatten::Flat;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

/// An MPI datatype: cheap to clone (an `Arc`), immutable once built except for its name and its
/// committed state. Clones are the same MPI object (equality is identity).
#[derive(Clone)]
pub struct Datatype(Arc<Inner>);

struct Inner {
    kind: Kind,
    attrs: Attrs,
    /// `None`: the default name (the predefined name, or empty).
    name: RwLock<Option<String>>,
    /// Set by `commit`: the flattened blocks of one element.
    flat: OnceLock<Arc<Flat>>,
    /// Built by a large-count (`_c`) constructor: its envelope lists counts as large counts.
    large: AtomicBool,
    /// Never reused in the process (see [`Datatype::uid`]).
    uid: u64,
}

/// How a type was built: what `get_envelope`/`get_contents` return, and what `parts` walks.
enum Kind {
    Named(Predefined),
    /// A pair type (`MPI_FLOAT_INT`...): named, but made of two basic types.
    Pair(Predefined, [Datatype; 2], [i64; 2]),
    Dup(Datatype),
    Contiguous {
        count: i64,
        old: Datatype,
    },
    Vector {
        count: i64,
        blocklength: i64,
        stride: i64,
        old: Datatype,
    },
    Hvector {
        count: i64,
        blocklength: i64,
        stride: i64,
        old: Datatype,
    },
    Indexed {
        blocklengths: Vec<i64>,
        displacements: Vec<i64>,
        old: Datatype,
    },
    Hindexed {
        blocklengths: Vec<i64>,
        displacements: Vec<i64>,
        old: Datatype,
    },
    IndexedBlock {
        blocklength: i64,
        displacements: Vec<i64>,
        old: Datatype,
    },
    HindexedBlock {
        blocklength: i64,
        displacements: Vec<i64>,
        old: Datatype,
    },
    Struct {
        blocklengths: Vec<i64>,
        displacements: Vec<i64>,
        types: Vec<Datatype>,
    },
    /// `body` is the equivalent resized(hindexed_block(vector...)) type that MPICH builds.
    Subarray {
        sizes: Vec<i64>,
        subsizes: Vec<i64>,
        starts: Vec<i64>,
        order: Order,
        old: Datatype,
        body: Datatype,
    },
    Resized {
        lb: i64,
        extent: i64,
        old: Datatype,
    },
    /// `body` is the equivalent resized(hindexed_block(...)) type that MPICH builds.
    Darray {
        args: Darray,
        old: Datatype,
        body: Datatype,
    },
    /// A type of `MPI_Type_create_f90_*`: the predefined type `base` of the size the Fortran
    /// precision `p` and range `r` select (`p` is `None` for integers).
    F90 {
        kind: F90Kind,
        p: Option<i64>,
        r: i64,
        base: Datatype,
    },
}

/// The attributes of a type, computed once by its constructor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Attrs {
    size: u64,
    lb: i64,
    extent: i64,
    true_lb: i64,
    true_ub: i64,
    /// Alignment used for the padding of struct types that contain this one.
    align: u64,
    /// Basic elements in one element.
    elements: u64,
    /// `Some(start)` when the packed bytes of one element are exactly the memory
    /// `start..start + size` in order (one block, or none when `size == 0`).
    run: Option<i64>,
}

impl Attrs {
    /// The attributes of an empty type (MPICH's "zerolen" type: count 0, all blocks empty).
    const EMPTY: Attrs =
        Attrs { size: 0, lb: 0, extent: 0, true_lb: 0, true_ub: 0, align: 0, elements: 0, run: Some(0) };
}

static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Datatype {
    fn new(kind: Kind, attrs: Attrs) -> Datatype {
        Datatype(Arc::new(Inner {
            kind,
            attrs,
            name: RwLock::new(None),
            flat: OnceLock::new(),
            large: AtomicBool::new(false),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
        }))
    }

    /// A number no other type of this process ever has, even after this one is dropped (peers
    /// cache a type's description under it: one-sided operations send it once per peer).
    pub fn uid(&self) -> u64 {
        self.0.uid
    }

    /// Marks a type just built by a large-count constructor (`MPI_Type_contiguous_c`...): its
    /// envelope and contents then give the counts as large counts (MPI 4.0, 5.1.13).
    pub fn with_large_counts(self) -> Datatype {
        self.0.large.store(true, Ordering::Relaxed);
        self
    }

    /// Whether a large-count constructor built this type.
    pub fn has_large_counts(&self) -> bool {
        self.0.large.load(Ordering::Relaxed)
    }

    /// A number that identifies this MPI object while it lives (for tables keyed by object,
    /// such as attribute caches); another object may reuse it after this one is dropped.
    pub fn object_id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The predefined type `p` (always the same object, already committed).
    pub fn predefined(p: Predefined) -> Datatype {
        Datatype::predefined_ref(p).clone()
    }

    /// The predefined type `p`, borrowed for the program's life: no reference count touched
    /// (what the express calls pass down).
    pub fn predefined_ref(p: Predefined) -> &'static Datatype {
        static TABLE: OnceLock<Vec<Datatype>> = OnceLock::new();
        &TABLE.get_or_init(constructors::predefined_table)[p.index()]
    }

    /// Whether `self` and `other` are the same MPI object.
    pub fn same(&self, other: &Datatype) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The predefined type this is, if it is one (not for a dup of one); an f90 type
    /// (`MPI_Type_create_f90_*`, predefined in MPI's sense) is its base type, so reductions
    /// treat it as that type.
    pub fn as_predefined(&self) -> Option<Predefined> {
        match &self.0.kind {
            Kind::Named(p) | Kind::Pair(p, ..) => Some(*p),
            Kind::F90 { base, .. } => base.as_predefined(),
            _ => None,
        }
    }

    /// Packed size of one element in bytes (`MPI_Type_size_x`).
    pub fn size(&self) -> u64 {
        self.0.attrs.size
    }

    /// Lower bound (`MPI_Type_get_extent`).
    pub fn lb(&self) -> i64 {
        self.0.attrs.lb
    }

    /// Extent: the distance between consecutive elements (may be negative after `resized`).
    pub fn extent(&self) -> i64 {
        self.0.attrs.extent
    }

    /// Upper bound: `lb + extent`.
    pub fn ub(&self) -> i64 {
        self.0.attrs.lb + self.0.attrs.extent
    }

    /// True lower bound: the first byte the type map touches (`MPI_Type_get_true_extent`).
    pub fn true_lb(&self) -> i64 {
        self.0.attrs.true_lb
    }

    /// True extent: from the first to one past the last byte touched.
    pub fn true_extent(&self) -> i64 {
        self.0.attrs.true_ub - self.0.attrs.true_lb
    }

    /// Alignment that pads the extent of struct types built from this type.
    pub fn alignment(&self) -> u64 {
        self.0.attrs.align
    }

    /// Number of basic (predefined non-pair) elements in one element; a pair type counts two.
    pub fn num_elements(&self) -> u64 {
        self.0.attrs.elements
    }

    /// Whether any count of elements at `buf` is the single memory run
    /// `buf + contiguous_offset() ..` of `count * size()` bytes, in packed order.
    pub fn is_contiguous(&self) -> bool {
        self.contiguous_offset().is_some()
    }

    /// `Some(offset)` when [`Datatype::is_contiguous`]: where the run starts relative to the buffer
    /// (the true lower bound, or 0 for an empty type).
    pub fn contiguous_offset(&self) -> Option<i64> {
        let a = &self.0.attrs;
        match a.run {
            Some(_) if a.size == 0 => Some(0),
            Some(start) if a.extent == a.size as i64 => Some(start),
            _ => None,
        }
    }

    /// Commits the type (`MPI_Type_commit`): flattens one element into merged blocks. Idempotent.
    pub fn commit(&self) -> Result<()> {
        if self.0.flat.get().is_none() {
            let flat = Arc::new(Flat::of(self)?);
            let _ = self.0.flat.set(flat);
        }
        Ok(())
    }

    /// Whether [`Datatype::commit`] was called (predefined types always are).
    pub fn is_committed(&self) -> bool {
        self.0.flat.get().is_some()
    }

    /// The blocks `(offset, len)` of one element in packed order, adjacent blocks merged; `None`
    /// before commit.
    pub fn blocks(&self) -> Option<&[(isize, usize)]> {
        self.0.flat.get().map(|f| f.blocks())
    }

    fn flat(&self) -> Result<&Arc<Flat>> {
        self.0.flat.get().ok_or_else(|| TypeError::ty("the datatype has not been committed"))
    }

    /// Sets the name (`MPI_Type_set_name`); for a predefined type, for every user of it.
    pub fn set_name(&self, name: &str) {
        *self.0.name.write().unwrap_or_else(|e| e.into_inner()) = Some(name.to_owned());
    }

    /// The name (`MPI_Type_get_name`): the one set, else the predefined name, else empty.
    pub fn name(&self) -> String {
        if let Some(n) = &*self.0.name.read().unwrap_or_else(|e| e.into_inner()) {
            return n.clone();
        }
        match self.0.kind {
            // An f90 type has no name (as in MPICH), though `as_predefined` gives its base.
            Kind::Named(p) | Kind::Pair(p, ..) => p.name().to_owned(),
            _ => String::new(),
        }
    }
}

impl PartialEq for Datatype {
    fn eq(&self, other: &Datatype) -> bool {
        self.same(other)
    }
}

impl Eq for Datatype {}

impl fmt::Debug for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.0.attrs;
        write!(
            f,
            "Datatype({} {:?}, size {}, lb {}, extent {}, true lb {}, true extent {})",
            combiner_name(self.envelope().combiner),
            self.name(),
            a.size,
            a.lb,
            a.extent,
            a.true_lb,
            self.true_extent()
        )
    }
}

#[cfg(test)]
mod tests;
