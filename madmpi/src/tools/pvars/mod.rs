//! Performance variables: what pioman and nmad count, read through their snapshots
//! (`Pioman::stats`, `Nmad::stats`, `Nmad::driver_stats`) and one per-communicator level.
//!
//! - [`list`]: the variables;
//! - [`sessions`]: sessions and handles, with MPI 4.0's start/stop/read/write/reset semantics.
//!
//! Counters and timers are not continuous: a handle starts stopped, and reads what accumulated
//! while it was started since its allocation or last reset. Levels, sizes, watermarks and
//! generic values are continuous and read-only: a handle reads the current value. Without a
//! runtime (before `MPI_Init`, after `MPI_Finalize`) every variable reads 0.
//!
//! Owns the descriptions and the reading of counters; the counting is pioman's and nmad's.

pub mod list;
pub mod sessions;

use super::kinds::{Bind, Class, Type, Value, Verbosity};
use crate::comm::Comm;

/// The object a handle is bound to.
#[derive(Clone)]
pub enum Bound {
    Nothing,
    Comm(Comm),
}

type Reader = Box<dyn Fn(&Bound) -> Value + Send + Sync>;

/// A performance variable.
pub struct Pvar {
    pub name: String,
    pub desc: String,
    pub verbosity: Verbosity,
    pub class: Class,
    pub ty: Type,
    pub bind: Bind,
    /// Index of its enumeration in the registry (state variables).
    pub enumtype: Option<usize>,
    pub category: &'static str,
    read: Reader,
}

impl Pvar {
    pub fn new(
        name: &str,
        class: Class,
        ty: Type,
        verbosity: Verbosity,
        category: &'static str,
        desc: &str,
        read: impl Fn(&Bound) -> Value + Send + Sync + 'static,
    ) -> Pvar {
        Pvar {
            name: name.into(),
            desc: desc.into(),
            verbosity,
            class,
            ty,
            bind: Bind::NoObject,
            enumtype: None,
            category,
            read: Box::new(read),
        }
    }

    pub fn with_enum(mut self, e: usize) -> Pvar {
        self.enumtype = Some(e);
        self
    }

    pub fn bound_to(mut self, b: Bind) -> Pvar {
        self.bind = b;
        self
    }

    /// Accumulating variables may be reset and written through a handle; the others are
    /// read-only.
    pub fn readonly(&self) -> bool {
        !self.class.accumulates()
    }

    /// Only accumulating variables are started and stopped.
    pub fn continuous(&self) -> bool {
        !self.class.accumulates()
    }

    /// A handle reads and resets in one step (`MPI_T_pvar_readreset`) without losing counts.
    pub fn atomic(&self) -> bool {
        self.class.accumulates()
    }

    /// The value now, process-wide (or of the bound object).
    pub fn sample(&self, b: &Bound) -> Value {
        (self.read)(b)
    }
}
