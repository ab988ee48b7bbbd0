//! Cross-crate and multi-process integration tests live in `tests/tests/`.
//!
//! This crate owns no library code; it exists so that tests which start real processes or combine
//! several crates have a home outside any single crate.
