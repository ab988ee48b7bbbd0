//! `madbench`: the benchmark suite (`madbench --help`). Built in release mode beside
//! `libmpi.so`, `madrun` and `mpicc` (`cargo build --release -p madmpi-libmpi -p tools -p bench`,
//! which `./run bench` does), it compares our runtime with MPICH and Open MPI on this machine;
//! see `bench::suite`.
//!
//! The same executable is the rank program of the benchmarks that use our runtime's Rust API
//! (`MADBENCH_RANK` set: `bench::ranks`).

use bench::suite::options::Options;

fn main() {
    pm2_log::init();
    if std::env::var_os("MADBENCH_RANK").is_some() {
        std::process::exit(bench::ranks::rank_main());
    }
    let opts = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(msg) => {
            let help = msg.starts_with("usage");
            if help {
                print!("{msg}");
            } else {
                eprintln!("madbench: {msg}");
            }
            std::process::exit(if help { 0 } else { 2 });
        }
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("madbench: cannot find my own executable: {e}");
            std::process::exit(1);
        }
    };
    std::process::exit(bench::suite::run(&opts, &exe));
}
