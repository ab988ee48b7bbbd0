//! The `tcp` driver (being written: issue 5).

use super::{Driver, DriverEnv};
use std::io;
use std::sync::Arc;

pub struct TcpDriver;

impl TcpDriver {
    /// `arg`: the interface name or address to listen on (`tcp:ARG`), if any.
    pub fn create(_env: &DriverEnv, _arg: Option<&str>) -> io::Result<Arc<dyn Driver>> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "the tcp driver is not written yet"))
    }
}
