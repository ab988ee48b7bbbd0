//! Control variables: every setting of the stack, with the value in force, and the few the
//! runtime takes at run time writable.
//!
//! - [`settings`]: marcel's, pioman's and nmad's environment variables;
//! - [`coll`]: madmpi's collective algorithm choices and trace (writable).
//!
//! A variable read before `MPI_Init` or after `MPI_Finalize` shows what the environment sets
//! (or the default); between them, where the runtime can say, what it runs with. Owns the
//! descriptions and their read/write functions; the settings themselves stay with their crates.

pub mod coll;
pub mod settings;

use super::error::{TError, TResult};
use super::kinds::{Scope, Type, Value, Verbosity};

/// Room for a text value (the `count` of `MPI_CHAR` variables).
pub const TEXT_CAP: usize = 256;

type Reader = Box<dyn Fn() -> Value + Send + Sync>;
type Writer = Box<dyn Fn(&Value) -> TResult<()> + Send + Sync>;

/// A control variable.
pub struct Cvar {
    pub name: String,
    pub desc: String,
    pub verbosity: Verbosity,
    pub ty: Type,
    /// Index of its enumeration in the registry.
    pub enumtype: Option<usize>,
    pub scope: Scope,
    /// The category (by name) that lists it.
    pub category: &'static str,
    read: Reader,
    write: Option<Writer>,
}

impl Cvar {
    pub fn new(
        name: &str,
        ty: Type,
        scope: Scope,
        verbosity: Verbosity,
        category: &'static str,
        desc: &str,
        read: impl Fn() -> Value + Send + Sync + 'static,
    ) -> Cvar {
        Cvar {
            name: name.into(),
            desc: desc.into(),
            verbosity,
            ty,
            enumtype: None,
            scope,
            category,
            read: Box::new(read),
            write: None,
        }
    }

    pub fn with_enum(mut self, e: usize) -> Cvar {
        self.enumtype = Some(e);
        self
    }

    pub fn with_write(mut self, w: impl Fn(&Value) -> TResult<()> + Send + Sync + 'static) -> Cvar {
        self.write = Some(Box::new(w));
        self
    }

    /// Elements of a value (text: the room for it, NUL included).
    pub fn count(&self) -> usize {
        if self.ty == Type::Char { TEXT_CAP } else { 1 }
    }

    pub fn read(&self) -> Value {
        (self.read)()
    }

    /// Sets the value: `CvarSetNever` for read-only variables, `CvarSetNotNow` when the runtime
    /// cannot take it now (e.g. before `MPI_Init`), `Invalid` for a value out of its set.
    pub fn write(&self, v: &Value) -> TResult<()> {
        match &self.write {
            Some(w) => w(v),
            None => Err(TError::CvarSetNever),
        }
    }

    pub fn writable(&self) -> bool {
        self.write.is_some()
    }
}

/// The trimmed, non-empty value of environment variable `k`.
pub(crate) fn env(k: &str) -> Option<String> {
    std::env::var(k).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}
