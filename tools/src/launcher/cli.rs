//! madrun's command line: mpiexec's spellings (`-n`/`-np`, `-genv`, `-hosts`) and madrun's own
//! long options, parsed into a [`JobSpec`]. Errors are messages for the user.

use super::JobSpec;
use std::time::Duration;

pub const USAGE: &str = "\
usage: madrun [options] PROGRAM [ARGS...]

Starts N processes of PROGRAM as one job and serves them PMI-1 and PMI-2 (like mpiexec).

options:
  -n N, -np N              number of processes (default 1)
  -hosts H1,H2,...         hosts to place processes on, round-robin (also --hosts, -host);
                           localhost, 127.0.0.1 and this machine's name run locally, others
                           through the launcher command, with PMI over TCP
  -genv NAME VALUE         set an environment variable in every process
  --env NAME=VALUE         the same
  --timeout S              kill the job after S seconds (exit code 124)
  --tag-output             prefix each output line with [RANK] (also -l, -prepend-rank)
  -disable-auto-cleanup    when a process dies, report it and let the others go on (for
                           fault-tolerant programs; also --disable-auto-cleanup); madrun exits
                           with the first failed process's code
  --launcher-exec CMD      command starting remote processes, run as
                           `CMD HOST env VAR=VALUE... PROGRAM ARGS...` (default: ssh); the part
                           after HOST is quoted for the remote shell
  --pmi-bind ADDR[:PORT]   address the TCP PMI port listens on (default: the --pmi-host
                           address if it is this machine's, else the one this machine reaches
                           the remote hosts from, else 0.0.0.0; any port)
  --pmi-host ADDR          address remote processes connect to (default: this machine's first
                           non-loopback IPv4 address)
  -h, --help               show this help

Processes get PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS and PMI_FD (local) or
PMI_PORT, PMI_ID and PM2_JOB_KEY (remote). madrun's stdin goes to process 0. If a process fails
(non-zero exit, signal, PMI abort, malformed PMI request, exit between PMI init and finalize),
madrun kills the job and exits with its code (128+signal when killed by a signal).
";

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Run(JobSpec),
    Help,
}

/// Most processes one job may have.
pub const MAX_PROCS: u32 = 100_000;

struct Args<'a> {
    args: &'a [String],
    i: usize,
}

impl Args<'_> {
    /// The value of option `name`: inline (`--name=value`) or the next argument.
    fn value(&mut self, name: &str, inline: Option<&str>, what: &str) -> Result<String, String> {
        if let Some(v) = inline {
            return Ok(v.to_string());
        }
        self.i += 1;
        self.args.get(self.i).cloned().ok_or_else(|| format!("{name} needs {what}"))
    }
}

/// Parses madrun's arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Command, String> {
    let mut spec = JobSpec::default();
    let mut a = Args { args, i: 0 };
    while let Some(arg) = args.get(a.i) {
        if arg == "--" {
            a.i += 1;
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if arg.starts_with("--") => (n, Some(v)),
            _ => (arg.as_str(), None),
        };
        let flag = |set: &mut bool| match inline {
            None => {
                *set = true;
                Ok(())
            }
            Some(_) => Err(format!("{name} takes no value")),
        };
        match name {
            "-h" | "-help" | "--help" => return Ok(Command::Help),
            "-n" | "-np" | "--np" => {
                spec.nprocs = parse_nprocs(&a.value(name, inline, "a number of processes")?)?
            }
            "-hosts" | "--hosts" | "-host" | "--host" => {
                spec.hosts = parse_hosts(&a.value(name, inline, "a list of hosts")?)?
            }
            "-genv" | "--genv" => {
                let k = a.value(name, inline, "a name and a value")?;
                let v = a.value(name, None, "a name and a value")?;
                spec.env.push((check_env_name(&k)?, v));
            }
            "--env" => {
                let kv = a.value(name, inline, "NAME=VALUE")?;
                let (k, v) =
                    kv.split_once('=').ok_or_else(|| format!("--env {kv:?}: expected NAME=VALUE"))?;
                spec.env.push((check_env_name(k)?, v.to_string()));
            }
            "--timeout" | "-timeout" => {
                spec.timeout = Some(parse_timeout(&a.value(name, inline, "a number of seconds")?)?)
            }
            "--tag-output" | "-l" | "-prepend-rank" | "--prepend-rank" => flag(&mut spec.tag_output)?,
            "--launcher-exec" | "-launcher-exec" => {
                let cmd = a.value(name, inline, "a command")?;
                if cmd.split_whitespace().next().is_none() {
                    return Err(format!("{name}: empty command"));
                }
                spec.launcher_exec = cmd;
            }
            "-disable-auto-cleanup" | "--disable-auto-cleanup" => {
                let mut on = false;
                flag(&mut on)?;
                spec.auto_cleanup = !on;
            }
            "--pmi-bind" => spec.pmi_bind = Some(a.value(name, inline, "an address")?),
            "--pmi-host" => spec.pmi_host = Some(a.value(name, inline, "an address")?),
            _ => return Err(format!("unknown option {arg:?}")),
        }
        a.i += 1;
    }
    spec.program = args[a.i.min(args.len())..].to_vec();
    if spec.program.is_empty() {
        return Err("no program to run".to_string());
    }
    Ok(Command::Run(spec))
}

fn parse_nprocs(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_PROCS).contains(&n) => Ok(n),
        _ => Err(format!("-n {s:?}: expected a number of processes from 1 to {MAX_PROCS}")),
    }
}

fn parse_hosts(s: &str) -> Result<Vec<String>, String> {
    let hosts: Vec<String> =
        s.split(',').map(str::trim).filter(|h| !h.is_empty()).map(str::to_string).collect();
    if hosts.is_empty() || hosts.iter().any(|h| h.starts_with('-') || h.chars().any(char::is_whitespace)) {
        return Err(format!("-hosts {s:?}: expected host names separated by commas"));
    }
    Ok(hosts)
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t > 0.0 && t <= 1e9 => Ok(Duration::from_secs_f64(t)),
        _ => Err(format!("--timeout {s:?}: expected a positive number of seconds")),
    }
}

fn check_env_name(k: &str) -> Result<String, String> {
    if k.is_empty() || k.contains('=') || k.contains('\0') {
        return Err(format!("{k:?} is not a valid environment variable name"));
    }
    Ok(k.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &str) -> Result<JobSpec, String> {
        let args: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        match parse(&args)? {
            Command::Run(s) => Ok(s),
            Command::Help => Err("help".into()),
        }
    }

    #[test]
    fn mpiexec_and_long_spellings() {
        let s = run("-np 4 -hosts a,b --env X=1 -genv Y 2 --timeout 1.5 --tag-output prog -n 3 --x").unwrap();
        assert_eq!(s.nprocs, 4);
        assert_eq!(s.hosts, ["a", "b"]);
        assert_eq!(s.env, [("X".to_string(), "1".to_string()), ("Y".to_string(), "2".to_string())]);
        assert_eq!(s.timeout, Some(Duration::from_millis(1500)));
        assert!(s.tag_output);
        assert_eq!(s.program, ["prog", "-n", "3", "--x"], "options after the program are its own");
        assert!(!run("-disable-auto-cleanup -n 2 prog").unwrap().auto_cleanup);
        assert!(run("-n 2 prog").unwrap().auto_cleanup);
        let s = run("--hosts=h1 --timeout=2 --launcher-exec=rsh -- -weird").unwrap();
        assert_eq!((s.nprocs, s.hosts.len(), s.launcher_exec.as_str()), (1, 1, "rsh"));
        assert_eq!(s.program, ["-weird"]);
        assert_eq!(run("hostname").unwrap().launcher_exec, "ssh");
        assert_eq!(run("-h x"), Err("help".into()));
    }

    #[test]
    fn bad_arguments_are_clear_errors() {
        for (args, want) in [
            ("-n", "-n needs"),
            ("-n 0 prog", "expected a number"),
            ("-n x prog", "expected a number"),
            ("-n 3", "no program"),
            ("--bogus prog", "unknown option \"--bogus\""),
            ("--env X prog", "expected NAME=VALUE"),
            ("-genv X", "needs a name and a value"),
            ("--env =1 prog", "not a valid environment variable"),
            ("--timeout -1 prog", "positive number"),
            ("--timeout nan prog", "positive number"),
            ("-hosts , prog", "expected host names"),
            ("--tag-output=yes prog", "takes no value"),
        ] {
            let e = run(args).unwrap_err();
            assert!(e.contains(want), "{args}: {e}");
        }
    }
}
