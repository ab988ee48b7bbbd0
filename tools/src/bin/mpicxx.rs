//! mpicxx: the C++ compiler wrapper for MadMPI (C bindings; MPI has no C++ bindings since
//! MPI-3). See `mpicxx -help` and [`tools::ccwrap`].

fn main() {
    pm2_log::init();
    std::process::exit(tools::ccwrap::main(tools::ccwrap::Lang::Cxx));
}
