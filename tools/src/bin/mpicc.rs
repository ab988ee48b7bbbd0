//! mpicc: the C compiler wrapper for MadMPI. See `mpicc -help` and [`tools::ccwrap`].

fn main() {
    pm2_log::init();
    std::process::exit(tools::ccwrap::main(tools::ccwrap::Lang::C));
}
