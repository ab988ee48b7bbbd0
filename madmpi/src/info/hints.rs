//! The communicator hints MadMPI recognizes: MPI 4.0's four assertions (section 7.4.4), each a
//! boolean, `false` by default.
//!
//! | key | the program promises |
//! |-----|----------------------|
//! | `mpi_assert_no_any_tag` | no receive or probe on the communicator uses `MPI_ANY_TAG` |
//! | `mpi_assert_no_any_source` | none uses `MPI_ANY_SOURCE` |
//! | `mpi_assert_exact_length` | every message received fills its receive buffer exactly |
//! | `mpi_assert_allow_overtaking` | messages need not be matched in the order they were sent |
//!
//! They are recorded and reported (`MPI_Comm_get_info` gives all four), and change nothing
//! else: MPI lets an implementation ignore any hint, and nmad's matching gains nothing from
//! them yet. A value other than `true` or `false` (the spellings MPI requires every
//! implementation to accept) leaves the hint as it was; keys MadMPI does not know are ignored,
//! as MPI requires.
//!
//! Which communicators keep which hints: `MPI_Comm_dup` copies them (MPI: the duplicate has
//! the same "info hints"), `MPI_Comm_dup_with_info` and `MPI_Comm_split_type` take the
//! defaults updated by their info argument, other new communicators start with the defaults.

use super::Info;

/// The recognized hints of a communicator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CommHints {
    /// `mpi_assert_no_any_tag`.
    pub no_any_tag: bool,
    /// `mpi_assert_no_any_source`.
    pub no_any_source: bool,
    /// `mpi_assert_exact_length`.
    pub exact_length: bool,
    /// `mpi_assert_allow_overtaking`.
    pub allow_overtaking: bool,
}

/// The keys, in the order `MPI_Comm_get_info` lists them (MPICH's).
const KEYS: [&str; 4] = [
    "mpi_assert_no_any_tag",
    "mpi_assert_no_any_source",
    "mpi_assert_exact_length",
    "mpi_assert_allow_overtaking",
];

impl CommHints {
    /// The hints in the order of [`KEYS`].
    fn fields(&mut self) -> [&mut bool; 4] {
        [&mut self.no_any_tag, &mut self.no_any_source, &mut self.exact_length, &mut self.allow_overtaking]
    }

    /// The defaults updated by `info` (`MPI_Comm_dup_with_info`).
    pub fn from_info(info: &Info) -> CommHints {
        let mut h = CommHints::default();
        h.update(info);
        h
    }

    /// `MPI_Comm_set_info`: takes the recognized keys of `info` that have a valid value; the
    /// other hints keep theirs.
    pub fn update(&mut self, info: &Info) {
        for (key, field) in KEYS.iter().zip(self.fields()) {
            match info.get(key) {
                Some(b"true") => *field = true,
                Some(b"false") => *field = false,
                _ => {}
            }
        }
    }

    /// `MPI_Comm_get_info`: every hint with its current value.
    pub fn to_info(mut self) -> Info {
        let mut info = Info::new();
        for (key, field) in KEYS.iter().zip(self.fields()) {
            info.set(key, if *field { "true" } else { "false" }).expect("valid key and value");
        }
        info
    }
}
