//! The process sets a session names: `mpi://WORLD` (every process of the job) and `mpi://SELF`
//! (this process), the two MPICH 4.0 offers, and what `MPI_Session_get_pset_info` tells of
//! them (`mpi_size`).
//!
//! Owns the pset names and their groups; it must not create communicators.

use crate::error::{Error, Result};
use crate::group::Group;
use crate::info::Info;
use nmad::Nmad;

/// The psets, in the order `MPI_Session_get_nth_pset` gives them.
pub const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// The group of pset `name` (`MPI_ERR_ARG` for a name that is not a pset, as MPICH).
pub fn pset_group(nm: &Nmad, name: &str) -> Result<Group> {
    match name {
        "mpi://WORLD" => Ok(Group::world(nm.size())),
        "mpi://SELF" => Group::new(vec![nm.rank()]),
        _ => Err(unknown(name)),
    }
}

/// `MPI_Session_get_pset_info`: `mpi_size`, the number of processes in the pset.
pub fn pset_info(nm: &Nmad, name: &str) -> Result<Info> {
    let size = pset_group(nm, name)?.size();
    Info::from_pairs([("mpi_size", size.to_string())])
}

fn unknown(name: &str) -> Error {
    Error::arg(format!("{name:?} is not a process set (they are {})", PSETS.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::testing::on_all;

    #[test]
    fn pset_groups_and_sizes() {
        on_all(2, |world| {
            let nm = world.runtime_nmad();
            assert_eq!(pset_group(nm, "mpi://WORLD").unwrap().members(), &[0, 1]);
            assert_eq!(pset_group(nm, "mpi://SELF").unwrap().members(), &[world.rank()]);
            assert_eq!(pset_info(nm, "mpi://WORLD").unwrap().get_str("mpi_size"), Some("2"));
            assert_eq!(pset_info(nm, "mpi://SELF").unwrap().get_str("mpi_size"), Some("1"));
            assert_eq!(pset_group(nm, "mpi://world").unwrap_err().class(), ErrorClass::Arg);
        });
    }
}
