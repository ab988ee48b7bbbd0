//! Starting the jobs a job's ranks spawn (`MPI_Comm_spawn` through PMI `spawn`, see
//! `server::spawn`): local processes, with the job's key and environment, universe ids after
//! those taken, and the parents' port (`PM2_PARENT_PORT`) for their `MPI_Init` to connect to.
//!
//! A spawned rank is a rank like the others for the event loop (I/O forwarded, reaped, its
//! failure ends everything); the whole universe ends when every process has. Owns the spawn
//! policy (capacity, local placement, `wdir`, `path`); the request grammar is the server's.

use super::Job;
use super::Phase;
use crate::launcher::{JobSpec, launch};
use crate::pmi::spawn::SpawnRequest;

/// What spawned jobs inherit.
#[derive(Debug)]
pub struct Spawner {
    spec: JobSpec,
    key_hex: String,
    /// Universe ids stay below this (what every process was told, `PM2_UNIVERSE`).
    capacity: u32,
}

impl Spawner {
    pub fn new(spec: JobSpec, key_hex: String, capacity: u32) -> Spawner {
        Spawner { spec, key_hex, capacity }
    }
}

impl Job {
    pub fn set_spawner(&mut self, s: Spawner) {
        self.spawner = Some(s);
    }

    /// Acts on the spawn requests the server queued, and answers them.
    pub(super) fn serve_spawns(&mut self) {
        for (id, req) in self.server.take_spawns() {
            let result = self.start_job(&req);
            self.server.spawn_done(id, result);
        }
    }

    fn start_job(&mut self, req: &SpawnRequest) -> Result<(), String> {
        if !matches!(self.phase, Phase::Running) {
            return Err("the job is ending".into());
        }
        let sp = self.spawner.as_ref().ok_or("this madrun does not spawn")?;
        let (base, nprocs) = (self.server.universe_len(), req.nprocs());
        if base.checked_add(nprocs).is_none_or(|end| end > sp.capacity) {
            return Err(format!("{nprocs} more processes do not fit: {base} of {} are taken", sp.capacity));
        }
        // Everything is checked before any process starts: a job half started would wait at
        // its first fence.
        let mut specs = Vec::new();
        for app in &req.apps {
            let cwd = app.wdir.as_deref().map(std::path::Path::new);
            if let Some(d) = cwd
                && !d.is_dir()
            {
                return Err(format!("wdir {d:?} is not a directory"));
            }
            let path = match &app.path {
                Some(p) => format!("{p}:{}", std::env::var("PATH").unwrap_or_default()),
                None => std::env::var("PATH").unwrap_or_default(),
            };
            if !runnable(&app.argv[0], cwd, &path) {
                return Err(format!("{:?} is not an executable program", app.argv[0]));
            }
            let mut spec = sp.spec.clone();
            spec.nprocs = nprocs;
            spec.program = app.argv.clone();
            spec.hosts.clear();
            spec.env.push(("PM2_UNIVERSE".into(), format!("{base}/{}", sp.capacity)));
            spec.env.push(("PM2_PARENT_PORT".into(), req.parent_port.clone()));
            if app.path.is_some() {
                spec.env.push(("PATH".into(), path));
            }
            specs.extend((0..app.nprocs).map(|_| (spec.clone(), app.wdir.clone())));
        }
        let key = sp.key_hex.clone();
        let first = self.server.add_job(nprocs);
        debug_assert_eq!(first, base);
        let places = launch::place(nprocs, &[], None);
        for (rank, ((spec, wdir), place)) in specs.iter().zip(&places).enumerate() {
            let cwd = wdir.as_deref().map(std::path::Path::new);
            match launch::start_rank(spec, rank as u32, place, self.pgid(), &key, None, cwd) {
                Ok(l) => self.add_rank(l),
                Err((what, code)) => {
                    self.fail(&format!("spawned job: {what}"), code);
                    return Err(what);
                }
            }
        }
        Ok(())
    }
}

/// Whether `program` names an executable file: a path (relative to `cwd` if given), or a name
/// found in `path`.
fn runnable(program: &str, cwd: Option<&std::path::Path>, path: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = std::path::Path::new(program);
        return executable(&cwd.filter(|_| p.is_relative()).map_or(p.to_path_buf(), |d| d.join(p)));
    }
    path.split(':').filter(|d| !d.is_empty()).any(|d| executable(&std::path::Path::new(d).join(program)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_by_path_or_in_path() {
        assert!(runnable("/bin/sh", None, ""));
        assert!(runnable("sh", None, "/nonexistent:/bin"));
        assert!(!runnable("sh", None, "/nonexistent"));
        assert!(runnable("./sh", Some(std::path::Path::new("/bin")), ""));
        let plain = std::env::temp_dir().join(format!("madrun-spawn-test-{}", std::process::id()));
        std::fs::write(&plain, "").unwrap();
        assert!(!runnable(plain.to_str().unwrap(), None, ""), "not executable");
        std::fs::remove_file(&plain).unwrap();
        assert!(!runnable("/tmp", None, ""), "a directory");
        assert!(!runnable("/no/such/program", None, "/bin"));
    }
}
