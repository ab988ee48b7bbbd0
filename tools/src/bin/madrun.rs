//! madrun: starts a job (like mpiexec). See `madrun --help` and [`tools::launcher`].

use tools::launcher::{self, cli};

fn main() {
    pm2_log::init();
    let args: Vec<String> = match std::env::args_os().skip(1).map(|a| a.into_string()).collect() {
        Ok(a) => a,
        Err(bad) => {
            eprintln!("madrun: argument {bad:?} is not valid UTF-8");
            std::process::exit(2);
        }
    };
    match cli::parse(&args) {
        Ok(cli::Command::Help) => print!("{}", cli::USAGE),
        Ok(cli::Command::Run(spec)) => std::process::exit(launcher::run(&spec)),
        Err(e) => {
            eprint!("madrun: {e}\n\n{}", cli::USAGE);
            std::process::exit(2);
        }
    }
}
