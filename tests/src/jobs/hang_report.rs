//! What a hung job was doing, for the test's failure message: the stacks of every process the
//! job started (gdb, attached in batch mode), compacted to one line per frame with identical
//! threads counted once. A hang in CI is otherwise a bare "job hung" with the output lost.
//!
//! Owns the inspection and the killing of a job's process tree; it must not decide what a hang
//! is (the caller's limit does).

use std::process::Command;
use std::time::Duration;

/// Frames kept per thread: enough to reach the MPI call from the innermost wait.
const FRAMES: usize = 32;
/// gdb's bound per process (loading a debug build's symbols takes seconds).
const GDB_LIMIT: Duration = Duration::from_secs(60);
/// Launch helpers whose stacks say nothing.
const HELPERS: [&str; 7] = ["sh", "bash", "ip", "env", "timeout", "sleep", "netns-hosts.sh"];

/// `root` and every process below it, parents first.
fn tree(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parent(pid)?)))
        .collect();
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        let p = all[i];
        all.extend(parents.iter().filter(|&&(_, pp)| pp == p).map(|&(c, _)| c));
        i += 1;
    }
    all
}

/// The parent of `pid` (field 4 of /proc/PID/stat, after the parenthesized name).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

fn name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Kills `root` and everything it started (children first would let them be re-parented).
pub fn kill_tree(root: u32) -> usize {
    let all = tree(root);
    for &pid in &all {
        // SAFETY: kill(2) with a pid read from /proc and a valid signal number; at worst the
        // process is gone (ESRCH), or the pid was reused by one of ours in the meantime.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    all.len()
}

/// The compacted stacks of the job under `root` (madrun and launch helpers left out).
pub fn stacks(root: u32) -> String {
    let Some(gdb) = super::which("gdb") else {
        return "(gdb is not installed: no stacks)\n".into();
    };
    let pids: Vec<u32> =
        tree(root).into_iter().skip(1).filter(|&p| !HELPERS.contains(&name(p).as_str())).collect();
    let reports: Vec<_> = pids
        .iter()
        .map(|&pid| {
            let gdb = gdb.clone();
            std::thread::spawn(move || {
                let out = Command::new("timeout")
                    .arg(GDB_LIMIT.as_secs().to_string())
                    .arg(&gdb)
                    .args(["-nx", "-batch", "-p", &pid.to_string(), "-ex", "set pagination off"])
                    .args(["-ex", &format!("thread apply all bt {FRAMES}")])
                    .output();
                let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
                format!("== pid {pid} ({})\n{}", name(pid), compact(&text))
            })
        })
        .collect();
    reports.into_iter().map(|t| t.join().unwrap_or_default()).collect()
}

/// gdb's `thread apply all bt` as one line per frame (`function @ file:line`), threads with the
/// same frames printed once with their count.
fn compact(gdb: &str) -> String {
    let mut threads: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for line in gdb.lines() {
        if let Some(rest) = line.strip_prefix("Thread ") {
            let label = rest.split_once(" (").map_or(rest, |(_, l)| l.trim_end_matches("):"));
            threads.push((vec![label.to_string()], Vec::new()));
        } else if let (Some(frame), Some(t)) = (frame(line), threads.last_mut()) {
            t.1.push(frame);
        }
    }
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (labels, frames) in threads {
        match groups.iter_mut().find(|g| g.1 == frames) {
            Some(g) => g.0.extend(labels),
            None => groups.push((labels, frames)),
        }
    }
    let mut s = String::new();
    for (labels, frames) in groups {
        s += &format!("- {} thread(s): {}\n", labels.len(), labels.join(", "));
        for f in frames {
            s += &format!("    {f}\n");
        }
    }
    if s.is_empty() { format!("(no stacks; gdb said: {})\n", tail(gdb, 5)) } else { s }
}

/// `#3  0x… in nmad::core::x<T> (self=…) at nmad/src/core/x.rs:12` → `nmad::core::x @
/// core/x.rs:12`; `None` for what is not a frame, and for the standard library's and the
/// thread start's frames (they say nothing about a hang).
fn frame(line: &str) -> Option<String> {
    let body = line.strip_prefix('#')?.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
    let body = body.split_once(" in ").map_or(body, |(_, f)| f);
    let func = without_generics(body.split(" (").next().unwrap_or(body).trim());
    const NOISE: [&str; 6] = ["std::", "core::", "alloc::", "__rust_try", "start_thread", "clone3"];
    if NOISE.iter().any(|n| func.starts_with(n)) {
        return None;
    }
    let at = body.rsplit_once(" at ").or_else(|| body.rsplit_once(" from ")).map(|(_, l)| l);
    let short =
        |l: &str| l.rsplit('/').take(3).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("/");
    Some(match at {
        Some(l) => format!("{func} @ {}", short(l)),
        None => func,
    })
}

/// `a::b<T, c::D<E>>::f<G>` → `a::b::f`.
fn without_generics(f: &str) -> String {
    let mut depth = 0usize;
    f.chars()
        .filter(|&c| {
            match c {
                '<' => depth += 1,
                '>' if depth > 0 => {
                    depth -= 1;
                    return false;
                }
                _ => {}
            }
            depth == 0
        })
        .collect()
}

/// The last `n` lines of `s`, each ending in a newline.
pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|l| format!("{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_compacted_and_identical_threads_counted_once() {
        let gdb = "\nThread 3 (Thread 0x7f LWP 12 \"lwp1\"):\n\
            #0  0x00007f in syscall () from /lib/x86_64-linux-gnu/libc.so.6\n\
            #1  0x000055 in marcel::park (t=0x1) at /w/marcel/src/park.rs:40\n\
            #12 0x000056 in std::thread::spawn<F> (f=0x1) at /r/std/src/thread.rs:1\n\
            Thread 2 (Thread 0x7e LWP 11 \"lwp0\"):\n\
            #0  0x00007f in syscall () from /lib/x86_64-linux-gnu/libc.so.6\n\
            #1  0x000055 in marcel::park (t=0x2) at /w/marcel/src/park.rs:40\n\
            #12 0x000056 in std::thread::spawn<F> (f=0x1) at /r/std/src/thread.rs:1\n\
            Thread 1 (Thread 0x7d LWP 10 \"prog\"):\n\
            #0  main () at prog.c:3\n";
        let c = compact(gdb);
        assert!(c.contains("- 2 thread(s): Thread 0x7f LWP 12 \"lwp1\", Thread 0x7e LWP 11 \"lwp0\""), "{c}");
        assert!(c.contains("    marcel::park @ marcel/src/park.rs:40\n"), "{c}");
        assert!(c.contains("    syscall @ lib/x86_64-linux-gnu/libc.so.6\n"), "{c}");
        assert!(!c.contains("std::thread"), "{c}");
        assert_eq!(without_generics("a::b<T, c::D<E>>::f<G>"), "a::b::f");
        assert!(c.contains("- 1 thread(s): Thread 0x7d LWP 10 \"prog\"\n    main @ prog.c:3\n"), "{c}");
    }

    #[test]
    fn the_tree_of_a_shell_holds_its_children_and_dies_with_them() {
        let mut sh = Command::new("sh").args(["-c", "sleep 30 & sleep 30 & wait"]).spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while tree(sh.id()).len() < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let all = tree(sh.id());
        assert_eq!(all.len(), 3, "{all:?}");
        assert!(all[1..].iter().all(|&p| name(p) == "sleep"), "{all:?}");
        assert_eq!(kill_tree(sh.id()), 3);
        let _ = sh.wait();
        let dead = |p: u32| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .map_or(true, |s| s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
        };
        while !all[1..].iter().all(|&p| dead(p)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(all[1..].iter().all(|&p| dead(p)), "still alive: {all:?}");
    }
}
