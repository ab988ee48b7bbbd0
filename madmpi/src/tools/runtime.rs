//! The running stack the variables read: the process's nmad instance (and through it pioman)
//! between `MPI_Init` and `MPI_Finalize`. Before and after, there is none: control variables show
//! the settings the environment would give, performance variables read 0.
//!
//! Owns the link to the runtime; [`crate::env::universe`] attaches and detaches it through
//! [`super::attach`] and [`super::detach`], which also tell the event delivery (this file is
//! below it: the delivery reads the runtime, the runtime names nobody).

use arc_swap::ArcSwapOption;
use nmad::Nmad;
use std::sync::Arc;

static ATTACHED: ArcSwapOption<Nmad> = ArcSwapOption::const_empty();

/// The runtime MPI runs on, from now on (at initialization).
pub(crate) fn attach(nm: &Nmad) {
    ATTACHED.store(Some(Arc::new(nm.clone())));
}

/// No runtime any more (before `MPI_Finalize` shuts nmad down).
pub(crate) fn detach() {
    ATTACHED.store(None);
}

/// The runtime, if MPI is initialized and not finalized.
pub(crate) fn nmad() -> Option<Arc<Nmad>> {
    ATTACHED.load_full()
}
