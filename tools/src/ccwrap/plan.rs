//! The wrapper's command line, without side effects: which arguments are the wrapper's own
//! (`-show`, `-compile-info`, `-cc=`...), whether the compiler will link, and the command line
//! that results. Finding the files is [`super::layout`]'s; running is [`super`]'s.

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// What the wrapper does with the command it builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Runs it (the default).
    Run,
    /// Prints it (`-show`, `-compile-info`, `-link-info`).
    Show,
    /// Prints only the flags the wrapper adds to compile (`-show-compile-info`).
    CompileFlags,
    /// Prints only the flags the wrapper adds to link (`-show-link-info`).
    LinkFlags,
    /// Prints the wrapper's help (`-help`).
    Help,
}

/// What the compiler is asked to do, which decides the flags the wrapper adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Preprocess, compile or generate dependencies only (`-c`, `-S`, `-E`, `-M`, `-MM`,
    /// `-fsyntax-only`): the include directory only.
    Compile,
    /// Link: the include directory, then the library, its directory and an rpath to it.
    Link,
    /// No input file (`--version`, `-v`, `-dumpmachine`...): the arguments pass through unchanged.
    Query,
}

/// A parsed wrapper command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// `-cc=CMD` / `-cxx=CMD`: the compiler to use instead of the default.
    pub compiler: Option<String>,
    pub output: Output,
    pub step: Step,
    /// `-v` was given: the wrapper also names itself (as MPICH's does).
    pub verbose: bool,
    /// The arguments for the compiler, in order.
    pub args: Vec<OsString>,
}

/// Arguments that stop the compiler before linking.
const NO_LINK: [&str; 6] = ["-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"];

/// Parses the wrapper's arguments (without the program name).
pub fn parse(args: &[OsString]) -> Result<Plan, String> {
    if args.is_empty() {
        return Err("no arguments: give source or object files and compiler options (see -help)".into());
    }
    let mut plan =
        Plan { compiler: None, output: Output::Run, step: Step::Query, verbose: false, args: vec![] };
    let mut forced = None;
    for arg in args {
        let s = arg.to_str().unwrap_or("");
        match s {
            "-show" => plan.output = Output::Show,
            "-compile-info" | "-compile_info" => (plan.output, forced) = (Output::Show, Some(Step::Compile)),
            "-link-info" | "-link_info" => (plan.output, forced) = (Output::Show, Some(Step::Link)),
            "-show-compile-info" => plan.output = Output::CompileFlags,
            "-show-link-info" => plan.output = Output::LinkFlags,
            "-help" => plan.output = Output::Help,
            _ => {
                if let Some(cmd) = s.strip_prefix("-cc=").or_else(|| s.strip_prefix("-cxx=")) {
                    if cmd.split_whitespace().next().is_none() {
                        return Err(format!("{s}: empty compiler command"));
                    }
                    plan.compiler = Some(cmd.to_string());
                    continue;
                }
                plan.verbose |= s == "-v";
                plan.args.push(arg.clone());
            }
        }
    }
    let compile_only = plan.args.iter().any(|a| NO_LINK.iter().any(|n| a == *n));
    // An input is any argument that is not an option (or `-`, standard input); the values of
    // options given apart (`-o out`) count too, which only matters when there is no real input,
    // and then the compiler fails anyway.
    let has_input = plan.args.iter().any(|a| a == "-" || !a.as_encoded_bytes().starts_with(b"-"));
    plan.step = forced.unwrap_or(if compile_only {
        Step::Compile
    } else if has_input || plan.output != Output::Run {
        // `mpicc -show` alone prints the full link line, as build systems expect.
        Step::Link
    } else {
        Step::Query
    });
    Ok(plan)
}

/// The flags the wrapper adds before the user's arguments to compile: `-I<include>`.
pub fn compile_flags(include: &Path) -> Vec<OsString> {
    vec![concat_os("-I", include)]
}

/// The flags the wrapper adds after the user's arguments to link:
/// `-L<lib> -lmpi -Wl,-rpath,<lib>`.
pub fn link_flags(lib: &Path) -> Vec<OsString> {
    vec![concat_os("-L", lib), "-lmpi".into(), concat_os("-Wl,-rpath,", lib)]
}

/// The full command: `compiler [-I<include>] args... [link flags]`, as `step` requires
/// (`include` and `lib` are read only when the step needs them).
pub fn command(
    compiler: &[String],
    step: Step,
    args: &[OsString],
    include: impl FnOnce() -> Vec<OsString>,
    link: impl FnOnce() -> Vec<OsString>,
) -> Vec<OsString> {
    let mut cmd: Vec<OsString> = compiler.iter().map(OsString::from).collect();
    if step != Step::Query {
        cmd.extend(include());
    }
    cmd.extend(args.iter().cloned());
    if step == Step::Link {
        cmd.extend(link());
    }
    cmd
}

fn concat_os(prefix: &str, path: &Path) -> OsString {
    let mut s = OsString::from(prefix);
    s.push(path.as_os_str());
    s
}

/// `words` as one shell command line: words with characters the shell treats specially are
/// single-quoted, so `-show`'s output can be pasted into a shell.
pub fn shell_line(words: &[OsString]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

fn quote(word: &OsStr) -> String {
    let s = word.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=,+:@%^".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(line: &str) -> Plan {
        parse(&line.split_whitespace().map(OsString::from).collect::<Vec<_>>()).unwrap()
    }

    fn line(p: &Plan) -> String {
        let cmd = command(
            &["cc".to_string()],
            p.step,
            &p.args,
            || compile_flags(Path::new("/p/include")),
            || link_flags(Path::new("/p/lib")),
        );
        shell_line(&cmd)
    }

    #[test]
    fn linking_adds_the_header_and_the_library() {
        let p = plan("-O2 ring.c -o ring");
        assert_eq!((p.step, p.output), (Step::Link, Output::Run));
        assert_eq!(line(&p), "cc -I/p/include -O2 ring.c -o ring -L/p/lib -lmpi -Wl,-rpath,/p/lib");
        assert_eq!(
            line(&plan("ring.o -o ring")),
            "cc -I/p/include ring.o -o ring -L/p/lib -lmpi -Wl,-rpath,/p/lib"
        );
    }

    #[test]
    fn compile_only_steps_add_the_header_only() {
        for flag in ["-c", "-E", "-S", "-M", "-MM", "-fsyntax-only"] {
            let p = plan(&format!("{flag} ring.c"));
            assert_eq!(p.step, Step::Compile, "{flag}");
            assert_eq!(line(&p), format!("cc -I/p/include {flag} ring.c"));
        }
    }

    #[test]
    fn queries_pass_through() {
        for q in ["--version", "-v", "-dumpversion", "-print-search-dirs"] {
            let p = plan(q);
            assert_eq!(p.step, Step::Query, "{q}");
            assert_eq!(line(&p), format!("cc {q}"));
        }
        assert!(plan("-v").verbose && !plan("--version").verbose);
    }

    #[test]
    fn show_and_info_options_print_instead_of_running() {
        let p = plan("-show ring.c -o ring");
        assert_eq!((p.output, p.step), (Output::Show, Step::Link));
        assert_eq!(line(&p), "cc -I/p/include ring.c -o ring -L/p/lib -lmpi -Wl,-rpath,/p/lib");
        // Alone, as build systems ask: the full link line.
        assert_eq!(line(&plan("-show")), "cc -I/p/include -L/p/lib -lmpi -Wl,-rpath,/p/lib");
        assert_eq!(line(&plan("-show -c ring.c")), "cc -I/p/include -c ring.c");
        assert_eq!(line(&plan("-compile-info")), "cc -I/p/include");
        assert_eq!(line(&plan("-compile_info")), "cc -I/p/include");
        assert_eq!(line(&plan("-link-info")), "cc -I/p/include -L/p/lib -lmpi -Wl,-rpath,/p/lib");
        assert_eq!(plan("-show-compile-info").output, Output::CompileFlags);
        assert_eq!(plan("-show-link-info").output, Output::LinkFlags);
        assert_eq!(plan("-help").output, Output::Help);
    }

    #[test]
    fn compiler_override_and_errors() {
        let p = plan("-cc=clang ring.c");
        assert_eq!((p.compiler.as_deref(), p.args.len()), (Some("clang"), 1));
        assert_eq!(plan("-cxx=g++-12 a.cc").compiler.as_deref(), Some("g++-12"));
        assert!(parse(&["-cc=".into()]).unwrap_err().contains("empty compiler"));
        assert!(parse(&[]).unwrap_err().contains("no arguments"));
    }

    #[test]
    fn shell_lines_quote_what_the_shell_would_split() {
        let words: Vec<OsString> = ["cc", "-I/a b/include", "-DX=it's", ""].map(OsString::from).to_vec();
        assert_eq!(shell_line(&words), r#"cc '-I/a b/include' '-DX=it'\''s' ''"#);
    }
}
