//! Tools (not implemented yet: issue 4 and later).
//!
//! It will own the launcher `madrun` (PMI-1/PMI-2 server, job secret), the PMI client used by
//! nmad's bootstrap, the `mpicc` wrapper and an info tool.
