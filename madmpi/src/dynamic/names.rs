//! The name service: `MPI_Publish_name`, `MPI_Lookup_name`, `MPI_Unpublish_name`, through nmad's
//! bootstrap (madrun's or Hydra's PMI-1 name service; a singleton's own table). Names and ports
//! must be printable ASCII without space, `=`, `;`, `\` or `#` (what PMI carries).
//!
//! Error classes as MPICH gives them: a name already published or not published is
//! `MPI_ERR_SERVICE` at publish and unpublish, and `MPI_ERR_NAME` at lookup; a launcher without
//! a name service (PMI-2) gives `MPI_ERR_SERVICE` everywhere.

use crate::comm::Comm;
use crate::error::{Error, ErrorClass, Result};
use std::io;

fn check(call: &str, what: &str, v: &str) -> Result<()> {
    tools::pmi::wire::check_value(v)
        .map_err(|e| Error::arg(format!("{call}: the {what} cannot travel through PMI: {e}")))
}

fn failed(call: &str, service: &str, e: io::Error, refused: ErrorClass) -> Error {
    let class = match e.kind() {
        io::ErrorKind::AlreadyExists | io::ErrorKind::NotFound => refused,
        _ => ErrorClass::Service,
    };
    Error::new(class, format!("{call}: service {service:?}: {e}"))
}

/// `MPI_Publish_name` (the communicator gives the process's nmad).
pub fn publish_name(c: &Comm, service: &str, port: &str) -> Result<()> {
    check("MPI_Publish_name", "service name", service)?;
    check("MPI_Publish_name", "port name", port)?;
    c.runtime_nmad()
        .publish_name(service, port)
        .map_err(|e| failed("MPI_Publish_name", service, e, ErrorClass::Service))
}

/// `MPI_Lookup_name`.
pub fn lookup_name(c: &Comm, service: &str) -> Result<String> {
    check("MPI_Lookup_name", "service name", service)?;
    c.runtime_nmad().lookup_name(service).map_err(|e| failed("MPI_Lookup_name", service, e, ErrorClass::Name))
}

/// `MPI_Unpublish_name`.
pub fn unpublish_name(c: &Comm, service: &str) -> Result<()> {
    check("MPI_Unpublish_name", "service name", service)?;
    c.runtime_nmad()
        .unpublish_name(service)
        .map_err(|e| failed("MPI_Unpublish_name", service, e, ErrorClass::Service))
}
