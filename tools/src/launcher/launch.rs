//! What each rank is started with: where it runs (round-robin over `-hosts`), its environment
//! (PMI variables after `-genv`/`--env` ones), its command line (the program itself, or the
//! launcher command for a remote host) and, for a local rank, its end of a PMI socketpair.

use super::JobSpec;
use super::procs::{self, Launch};
use super::remote;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

/// Variables of madrun's own environment that would mislead a rank (madrun may itself run in a
/// job); each rank gets its own values instead.
const PMI_VARS: &[&str] = &[
    "PMI_FD",
    "PMI_PORT",
    "PMI_ID",
    "PMI_RANK",
    "PMI_SIZE",
    "PMI_JOBID",
    "PM2_JOB_KEY",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "PM2_UNIVERSE",
    "PM2_PARENT_PORT",
];

/// Where a rank runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// `None`: on this machine.
    pub host: Option<String>,
    /// Its index among the ranks of its host, and their number.
    pub local_rank: u32,
    pub local_size: u32,
}

/// Ranks round-robin over `hosts` (all local when empty); hosts naming this machine are local.
pub fn place(n: u32, hosts: &[String], this_host: Option<&str>) -> Vec<Placement> {
    let host_of = |r: u32| -> Option<String> {
        let h = hosts.get(r as usize % hosts.len().max(1))?;
        (!remote::is_local_host(h, this_host)).then(|| h.clone())
    };
    let mut seen: HashMap<Option<String>, u32> = HashMap::new();
    let mut places: Vec<Placement> = (0..n)
        .map(|r| {
            let host = host_of(r);
            let count = seen.entry(host.as_ref().map(|h| h.to_ascii_lowercase())).or_insert(0);
            *count += 1;
            Placement { host, local_rank: *count - 1, local_size: 0 }
        })
        .collect();
    for p in &mut places {
        p.local_size = seen[&p.host.as_ref().map(|h| h.to_ascii_lowercase())];
    }
    places
}

/// A started rank and madrun's ends of its pipes and PMI socket.
#[derive(Debug)]
pub struct Launched {
    pub pid: i32,
    /// The local PMI socket (remote ranks connect to the PMI port instead).
    pub pmi: Option<File>,
    pub stdin: Option<File>,
    pub stdout: File,
    pub stderr: File,
}

/// Starts `rank` in process group `pgid` (`None`: it founds the job's group). The error is a
/// message and madrun's exit code (127: program not found, 126: not executable).
pub fn start_rank(
    spec: &JobSpec,
    rank: u32,
    place: &Placement,
    pgid: Option<i32>,
    key_hex: &str,
    pmi_port: Option<&str>,
    cwd: Option<&std::path::Path>,
) -> Result<Launched, (String, i32)> {
    let mut env = spec.env.clone();
    let mut set = |k: &str, v: String| env.push((k.to_string(), v));
    set("PMI_RANK", rank.to_string());
    set("PMI_SIZE", spec.nprocs.to_string());
    set("MPI_LOCALRANKID", place.local_rank.to_string());
    set("MPI_LOCALNRANKS", place.local_size.to_string());
    let failed = |what: &str, e: io::Error| {
        let code = match e.kind() {
            io::ErrorKind::NotFound => 127,
            io::ErrorKind::PermissionDenied => 126,
            _ => 1,
        };
        (format!("cannot start rank {rank} ({what}): {e}"), code)
    };
    let stdin = rank == 0;
    match &place.host {
        None => {
            let (ours, theirs) = UnixStream::pair().map_err(|e| failed("PMI socket", e))?;
            ours.set_nonblocking(true).map_err(|e| failed("PMI socket", e))?;
            set("PMI_FD", theirs.as_raw_fd().to_string());
            let l = Launch {
                argv: &spec.program,
                env_remove: PMI_VARS,
                env: &env,
                keep_fd: Some(theirs.as_raw_fd()),
                pgid,
                stdin,
                cwd,
            };
            let s = procs::spawn(&l).map_err(|e| failed(&spec.program[0], e))?;
            drop(theirs);
            let pmi = Some(File::from(OwnedFd::from(ours)));
            Ok(Launched { pid: s.pid, pmi, stdin: s.stdin, stdout: s.stdout, stderr: s.stderr })
        }
        Some(host) => {
            let port =
                pmi_port.ok_or_else(|| (format!("rank {rank} is remote but there is no PMI port"), 1))?;
            set("PMI_PORT", port.to_string());
            set("PMI_ID", rank.to_string());
            set("PM2_JOB_KEY", key_hex.to_string());
            let argv = remote::remote_command(&spec.launcher_exec, host, &env, &spec.program);
            let l =
                Launch { argv: &argv, env_remove: PMI_VARS, env: &[], keep_fd: None, pgid, stdin, cwd: None };
            let s = procs::spawn(&l).map_err(|e| failed(&format!("{} {host}", spec.launcher_exec), e))?;
            Ok(Launched { pid: s.pid, pmi: None, stdin: s.stdin, stdout: s.stdout, stderr: s.stderr })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_go_round_robin_and_local_aliases_are_one_host() {
        let hosts: Vec<String> = ["localhost", "b", "vm"].iter().map(|s| s.to_string()).collect();
        let p = place(5, &hosts, Some("vm"));
        let hosts: Vec<Option<&str>> = p.iter().map(|p| p.host.as_deref()).collect();
        assert_eq!(hosts, [None, Some("b"), None, None, Some("b")]);
        let local: Vec<(u32, u32)> = p.iter().map(|p| (p.local_rank, p.local_size)).collect();
        assert_eq!(local, [(0, 3), (0, 2), (1, 3), (2, 3), (1, 2)]);
        assert!(place(3, &[], None).iter().all(|p| p.host.is_none() && p.local_size == 3));
    }
}
