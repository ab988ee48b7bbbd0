//! The `shm` driver (being written: issue 5).

use super::{Driver, DriverEnv};
use std::io;
use std::sync::Arc;

pub struct ShmDriver;

impl ShmDriver {
    pub fn create(_env: &DriverEnv) -> io::Result<Arc<dyn Driver>> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "the shm driver is not written yet"))
    }
}
