//! The compiler wrappers `mpicc` and `mpicxx` (`src/bin/mpicc.rs`, `src/bin/mpicxx.rs`): they
//! run the system compiler with madmpi's header and library, as MPICH's wrappers do with its own.
//!
//! - compiling (`-c`, `-E`, `-S`, `-M`...): `CC -I<include> ARGS...`;
//! - linking: `CC -I<include> ARGS... -L<lib> -lmpi -Wl,-rpath,<lib>`;
//! - no input file (`--version`, `-v`, `-dumpversion`): `CC ARGS...` unchanged.
//!
//! `CC` is `$MADMPI_CC` (`$MADMPI_CXX` for mpicxx), else `cc` (`c++`), or `-cc=CMD`. `-show`
//! prints the command instead of running it; `-compile-info` and `-link-info` print the command
//! of a compile and of a link step; `-show-compile-info` and `-show-link-info` only the flags
//! the wrapper adds. The exit status is the compiler's.
//!
//! Files: `mod.rs` runs the command; [`plan`] reads the command line and builds the command;
//! [`layout`] finds the header and the library around the executable.

pub mod layout;
pub mod plan;

use layout::Layout;
use plan::{Output, Step};
use std::ffi::OsString;
use std::process::Command;

/// The language a wrapper compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    C,
    Cxx,
}

impl Lang {
    /// The wrapper's name.
    pub fn wrapper(self) -> &'static str {
        match self {
            Lang::C => "mpicc",
            Lang::Cxx => "mpicxx",
        }
    }

    /// The environment variable naming the compiler, and the default compiler.
    fn compiler_setting(self) -> (&'static str, &'static str) {
        match self {
            Lang::C => ("MADMPI_CC", "cc"),
            Lang::Cxx => ("MADMPI_CXX", "c++"),
        }
    }
}

fn help(lang: Lang) -> String {
    let name = lang.wrapper();
    let (var, default) = lang.compiler_setting();
    format!(
        "\
usage: {name} [options] [compiler arguments...]

Runs the {default} compiler (${var}, else `{default}`) with MadMPI's header and library:
`-I<include>` first, and when linking `-L<lib> -lmpi -Wl,-rpath,<lib>` last.

options:
  -show                 print the command instead of running it
  -compile-info         print the command of a compile step (header only)
  -link-info            print the command of a link step
  -show-compile-info    print only the flags added to compile
  -show-link-info       print only the flags added to link
  -cc=CMD, -cxx=CMD     use CMD as the compiler
  -help                 show this help
Everything else goes to the compiler (`{name} --version` is the compiler's version).
"
    )
}

/// Runs the wrapper for `lang` with the process's arguments; the exit status.
pub fn main(lang: Lang) -> i32 {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match run(lang, &args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}: {e}", lang.wrapper());
            1
        }
    }
}

/// Runs the wrapper for `lang` with `args`; the exit status, or an error for the user.
pub fn run(lang: Lang, args: &[OsString]) -> Result<i32, String> {
    let plan = plan::parse(args)?;
    if plan.output == Output::Help {
        print!("{}", help(lang));
        return Ok(0);
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let layout = Layout::of_executable(&exe);
    let include = || layout.header().map(plan::compile_flags);
    let link = || layout.library().map(plan::link_flags);
    match plan.output {
        Output::CompileFlags => {
            println!("{}", plan::shell_line(&include()?));
            return Ok(0);
        }
        Output::LinkFlags => {
            println!("{}", plan::shell_line(&link()?));
            return Ok(0);
        }
        _ => {}
    }
    // Look both up before building the command, so that errors come out first.
    let inc = if plan.step == Step::Query { Vec::new() } else { include()? };
    let lnk = if plan.step == Step::Link { link()? } else { Vec::new() };
    if plan.step == Step::Link && plan.output == Output::Run {
        layout.link_soname()?;
    }
    let compiler = compiler(lang, plan.compiler.as_deref())?;
    let cmd = plan::command(&compiler, plan.step, &plan.args, || inc, || lnk);
    if plan.verbose {
        println!("{} for MadMPI {} (MPICH 4.0 ABI)", lang.wrapper(), env!("CARGO_PKG_VERSION"));
    }
    if plan.output == Output::Show {
        println!("{}", plan::shell_line(&cmd));
        return Ok(0);
    }
    execute(&cmd)
}

/// The compiler command: `-cc=`, else the environment variable, else the default, split into
/// words (`ccache gcc` works).
fn compiler(lang: Lang, given: Option<&str>) -> Result<Vec<String>, String> {
    let (var, default) = lang.compiler_setting();
    let chosen = match given {
        Some(c) => c.to_string(),
        None => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => v,
            Ok(_) | Err(std::env::VarError::NotPresent) => default.to_string(),
            Err(std::env::VarError::NotUnicode(_)) => return Err(format!("${var} is not valid UTF-8")),
        },
    };
    Ok(chosen.split_whitespace().map(str::to_string).collect())
}

/// Runs `cmd`; its exit status (128 + the signal when killed by one).
fn execute(cmd: &[OsString]) -> Result<i32, String> {
    let status = Command::new(&cmd[0]).args(&cmd[1..]).status().map_err(|e| {
        let name = cmd[0].to_string_lossy();
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "the compiler `{name}` is not installed (Debian: apt-get install build-essential; \
                 or name another one with $MADMPI_CC / $MADMPI_CXX or -cc=)"
            )
        } else {
            format!("cannot run the compiler `{name}`: {e}")
        }
    })?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
