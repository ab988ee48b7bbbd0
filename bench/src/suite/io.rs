//! The MPI-IO stage (`madbench io`): `bench/mpi/io.c` at 4 ranks (sharing the two CPUs, as
//! `coll`'s 4-rank runs do) under each library, into a directory on tmpfs (`/dev/shm`) and one
//! on the local disk (beside the built programs, or `/var/tmp`), for three patterns: collective
//! write and read of row blocks and of a 2 × 2 checkerboard, and independent strided reads of
//! column blocks. Open MPI runs twice: its default MPI-IO component (OMPIO) and ROMIO
//! (`OMPI_MCA_io=romio321`, the column `Open MPI (ROMIO)`: a measurement policy label, as
//! `rma`'s `osc sm`). Beside them, the limit: one process writing and reading a file of the same
//! size with plain `write`/`read` (measured here, in madbench). Every figure is a page-cache
//! bandwidth: no timed operation syncs (the file system is synced before each repetition,
//! untimed, so that none pays for the previous one's writeback).
//!
//! Owns the directories it makes (removed when done) and the stage's tables and curves; the
//! launches are [`crate::mpi`]'s. A library whose program does not build or whose run fails
//! gets a row in the table of failed runs (`io-failed` measurements, which carry the reason),
//! not figures; the files each library wrote are compared by checksum (the program checks its
//! own against the array, this compares the libraries').

use super::options::{Options, Stage};
use super::progress::Progress;
use super::tables::Table;
use super::{Ctx, HANG};
use crate::mpi::{Launch, Transport, describe, human_bytes};
use crate::plot::Series;
use crate::record::{Impl, Measurement, Stat};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The program's patterns, in the tables' order.
pub const PATTERNS: [&str; 3] = ["rowblock", "checkerboard", "strided"];
/// Ranks of every launch.
pub const RANKS: u32 = 4;
/// Array sizes of `madbench io`.
pub const FULL: [u64; 4] = [1 << 20, 16 << 20, 256 << 20, 1 << 30];
/// Array sizes when the stage is part of `all` (about 1 minute here; the full set takes about 8,
/// half of it MPICH's checkerboard).
pub const IN_ALL: [u64; 3] = [1 << 20, 16 << 20, 64 << 20];
/// Array sizes with `--quick`.
pub const QUICK: [u64; 2] = [1 << 20, 4 << 20];
/// The policy label of Open MPI's ROMIO runs.
pub const ROMIO: &str = "romio";
/// The bench name of a failed run's row.
pub const FAILED: &str = "io-failed";

/// The array sizes of this run: `--io-sizes`, else by how the stage was asked for.
pub fn sizes(o: &Options) -> Vec<u64> {
    match &o.io_sizes {
        Some(s) => s.clone(),
        None if o.quick => QUICK.to_vec(),
        None if o.asked.contains(&Stage::Io) => FULL.to_vec(),
        None => IN_ALL.to_vec(),
    }
}

/// The (library, Open MPI io component) runs: Open MPI twice, OMPIO then ROMIO.
pub fn variants(libs: &[Impl]) -> Vec<(Impl, Option<&'static str>)> {
    let mut v = Vec::new();
    for &imp in libs {
        v.push((imp, None));
        if imp == Impl::OpenMpi {
            v.push((imp, Some("romio321")));
        }
    }
    v
}

/// Progress steps of the stage: per file system, the POSIX limit and every run.
pub fn steps(o: &Options) -> usize {
    2 * (1 + PATTERNS.len() * variants(&o.libs).len())
}

/// A directory the files go in, removed when dropped.
pub struct Place {
    /// `tmpfs` or `disk`: the tables' name for it.
    pub label: &'static str,
    pub dir: PathBuf,
    /// The file system's type, as `/proc/self/mounts` names it (`tmpfs`, `ext4`…).
    pub fstype: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The mount point and type of the file system holding `path` (the longest mount point of
/// `/proc/self/mounts` above it).
pub fn fs_of(path: &Path) -> Option<(PathBuf, String)> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut best: Option<(PathBuf, String)> = None;
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        let (Some(_dev), Some(mp), Some(ty)) = (f.next(), f.next(), f.next()) else { continue };
        let mp = PathBuf::from(mp.replace("\\040", " "));
        if path.starts_with(&mp)
            && best.as_ref().is_none_or(|(b, _)| mp.as_os_str().len() >= b.as_os_str().len())
        {
            best = Some((mp, ty.to_string()));
        }
    }
    best
}

/// Bytes free for an unprivileged writer in the file system of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct it is given from a NUL-terminated path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `c` outlives the call.
    (unsafe { libc::statvfs(c.as_ptr(), &mut s) } == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
}

fn memory_only(fstype: &str) -> bool {
    fstype == "tmpfs" || fstype == "ramfs"
}

/// The two places: tmpfs (`/dev/shm`) and the local disk (the first of `disk_candidates` on a
/// file system that is not in memory). Each a fresh directory of this process; what could not
/// be had, as warnings.
pub fn places(disk_candidates: &[PathBuf]) -> (Vec<Place>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let name = format!("madbench-io-{}", std::process::id());
    let mut wanted: Vec<(&'static str, PathBuf, String)> = Vec::new();
    match fs_of(Path::new("/dev/shm")) {
        Some((_, ty)) if memory_only(&ty) => wanted.push(("tmpfs", "/dev/shm".into(), ty)),
        _ => warnings.push("io: /dev/shm is not a tmpfs here: no tmpfs rows".into()),
    }
    match disk_candidates.iter().find_map(|c| fs_of(c).filter(|(_, ty)| !memory_only(ty)).map(|f| (c, f.1))) {
        Some((c, ty)) => wanted.push(("disk", c.clone(), ty)),
        None => warnings.push(format!(
            "io: none of {} is on a disk file system: no disk rows",
            disk_candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
    for (label, parent, fstype) in wanted {
        let dir = parent.join(&name);
        let _ = std::fs::remove_dir_all(&dir);
        match std::fs::create_dir_all(&dir) {
            Ok(()) => out.push(Place { label, dir, fstype }),
            Err(e) => warnings.push(format!("io: no {label} directory ({}): {e}", dir.display())),
        }
    }
    (out, warnings)
}

/// Writes back what the file system of `dir` holds dirty (`syncfs`; nothing on tmpfs), so that
/// a repetition does not pay for the previous one's writeback (as `io.c` does before each).
fn settle(dir: &Path) -> Result<(), String> {
    let d = std::fs::File::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // SAFETY: syncfs on a descriptor `d` keeps open for the call.
    if unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d)) } != 0 {
        return Err(format!("syncfs {}: {}", dir.display(), std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The limit: one process writing a fresh file of `size` bytes with `write` (the file created
/// first, untimed; the file system synced before, as in `io.c`) and reading it back with
/// `read`, `reps` times; (write, read) MB/s.
pub fn posix(dir: &Path, size: u64, reps: u32) -> Result<(Stat, Stat), String> {
    let path = dir.join("madbench-io-posix.dat");
    let err = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
    let len = usize::try_from(size).map_err(|_| "too large".to_string())?;
    // Both buffers touched before any timing (no first-touch faults in the figures).
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let mut back = vec![1u8; len];
    let (mut w, mut r) = (Vec::new(), Vec::new());
    let mb_s = |t: Duration| size as f64 / t.as_secs_f64() / 1e6;
    for _ in 0..reps {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(err("deleting", e)),
            _ => {}
        }
        settle(dir)?;
        let mut f = std::fs::File::create(&path).map_err(|e| err("creating", e))?;
        let t = Instant::now();
        f.write_all(&data).map_err(|e| err("writing", e))?;
        w.push(mb_s(t.elapsed()));
        drop(f);
        let mut f = std::fs::File::open(&path).map_err(|e| err("opening", e))?;
        let t = Instant::now();
        f.read_exact(&mut back).map_err(|e| err("reading", e))?;
        r.push(mb_s(t.elapsed()));
        if back != data {
            return Err(format!("{}: read back differs from what was written", path.display()));
        }
    }
    let _ = std::fs::remove_file(&path);
    Stat::of(&mut w).zip(Stat::of(&mut r)).ok_or_else(|| "no repetition".into())
}

/// The hang limit of a launch: the usual one plus the time its bytes take at 20 MB/s.
fn hang(sizes: &[u64], reps: u32) -> Duration {
    let bytes: u64 = sizes.iter().sum::<u64>() * 2 * u64::from(reps);
    HANG + Duration::from_secs_f64(bytes as f64 / 20e6)
}

/// The line of a failed run's output that says why (the program's own message, a linker's
/// error), after the first line; at most 300 characters.
pub fn why(e: &str) -> String {
    let lines: Vec<&str> = e.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let first = lines.first().copied().unwrap_or("failed");
    let cause = lines.iter().skip(1).find(|l| {
        l.starts_with("io: ")
            || l.contains("undefined reference")
            || l.contains("error:")
            || l.contains("rror")
    });
    let mut s = match cause {
        Some(c) => format!("{} {c}", first.trim_end_matches(':')),
        None => first.to_string(),
    };
    if s.chars().count() > 300 {
        s = s.chars().take(299).collect::<String>() + "…";
    }
    s
}

/// The row of a run that failed.
fn failed(pattern: &str, imp: Impl, variant: Option<&str>, place: &Place, reason: String) -> Measurement {
    let mut m =
        Measurement::new(FAILED, pattern, imp, "shm", 0, Stat { median: 0.0, min: 0.0, max: 0.0 }, "failed")
            .with("fs", place.label)
            .with("error", reason);
    if variant.is_some() {
        m.policy = ROMIO.into();
    }
    m
}

impl Ctx<'_> {
    /// Every place: the POSIX limit at every size, then every pattern under every variant.
    pub(super) fn io(&mut self, p: &mut Progress, (c0, c1): (usize, usize)) -> Vec<Measurement> {
        let sizes = sizes(self.opts);
        let reps = self.opts.reps;
        let mut candidates: Vec<PathBuf> = self.tc.map(|t| t.work.clone()).into_iter().collect();
        candidates.push(PathBuf::from("/var/tmp"));
        let (places, warnings) = places(&candidates);
        for w in warnings {
            p.warn(&w);
        }
        let cpus = format!("{c0},{c1},{c0},{c1}");
        let mut ms = Vec::new();
        for place in &places {
            // The file, and for tmpfs the ranks' buffers (twice the array) in the same memory.
            let need = |s: u64| if place.label == "tmpfs" { 3 * s } else { s } + (256 << 20);
            let free = free_bytes(&place.dir).unwrap_or(u64::MAX);
            let (fit, left): (Vec<u64>, Vec<u64>) = sizes.iter().partition(|&&s| need(s) <= free);
            if !left.is_empty() {
                p.warn(&format!(
                    "io: {} left out on {} ({}): {} MiB free",
                    left.iter().map(|&s| human_bytes(s)).collect::<Vec<_>>().join(", "),
                    place.label,
                    place.dir.display(),
                    free >> 20
                ));
            }
            if fit.is_empty() {
                continue;
            }
            p.step(&format!("io: one process's POSIX write and read on {} ({})", place.label, place.fstype));
            for &size in &fit {
                match posix(&place.dir, size, reps) {
                    Ok((w, r)) => {
                        for (op, st) in [("write", w), ("read", r)] {
                            ms.push(
                                Measurement::new(
                                    "io",
                                    &format!("posix-{op}"),
                                    Impl::Limit,
                                    "-",
                                    size,
                                    st,
                                    "MB/s",
                                )
                                .with("fs", place.label)
                                .with("fstype", place.fstype.as_str()),
                            );
                        }
                    }
                    Err(e) => {
                        *self.failures += 1;
                        p.warn(&format!("io: POSIX limit on {}: {e}", place.label));
                    }
                }
            }
            for pattern in PATTERNS {
                for (imp, variant) in variants(&self.opts.libs) {
                    let label = variant.map_or(String::new(), |_| " (ROMIO)".into());
                    p.step(&format!("io: {}{label}, {pattern} on {}", imp.label(), place.label));
                    match self.io_launch(imp, variant, place, pattern, &fit, &cpus) {
                        Ok(v) => ms.extend(v),
                        Err(e) => {
                            let reason = why(&e);
                            let what =
                                format!("io {pattern} {}{label} on {}: {reason}", imp.label(), place.label);
                            self.run_failed(p, imp, &what);
                            ms.push(failed(pattern, imp, variant, place, reason));
                        }
                    }
                }
            }
        }
        for m in file_mismatches(&ms) {
            *self.failures += 1;
            p.warn(&m);
        }
        ms
    }

    fn io_launch(
        &mut self,
        imp: Impl,
        variant: Option<&str>,
        place: &Place,
        pattern: &str,
        sizes: &[u64],
        cpus: &str,
    ) -> Result<Vec<Measurement>, String> {
        let Some(tc) = self.tc else { return Err("no MPI toolchain (see above)".into()) };
        let Some(exe) = self.exes.get(&(imp, "io")) else {
            // Built again for the reason (the warning above has it too).
            return Err(match tc.compile(imp, "io") {
                Err(e) => format!("io.c does not build:\n{e}"),
                Ok(_) => "io.c was not built".into(),
            });
        };
        let policy = if imp == Impl::Madmpi { self.opts.policy.as_deref() } else { None };
        let mut args = vec![self.opts.reps.to_string(), pattern.to_string(), place.dir.display().to_string()];
        args.extend(sizes.iter().map(u64::to_string));
        let l = Launch { imp, transport: Transport::Shm, policy, exe, args, cpus, ranks: RANKS };
        let mut cmd = l.command(tc);
        if let Some(v) = variant {
            // An MCA variable, as `--mca io romio321` would set it.
            cmd.env("OMPI_MCA_io", v);
        }
        let name = format!(
            "io {pattern} {} {}{}",
            imp.key(),
            place.label,
            variant.map_or(String::new(), |v| format!(" {v}"))
        );
        self.commands.insert(name, describe(&cmd));
        let mut ms = l.run_command(cmd, hang(sizes, self.opts.reps))?;
        for m in &mut ms {
            m.extra.insert("fs".into(), place.label.into());
            m.extra.insert("fstype".into(), place.fstype.clone().into());
            m.extra.insert("ranks".into(), RANKS.into());
            if variant.is_some() {
                m.policy = ROMIO.into();
            }
        }
        Ok(ms)
    }
}

/// A measurement's column in the io tables: madmpi, MPICH, Open MPI (OMPIO), Open MPI
/// (ROMIO), one process.
fn column(m: &Measurement) -> usize {
    match m.imp {
        Impl::Madmpi => 0,
        Impl::Mpich => 1,
        Impl::OpenMpi if m.policy == ROMIO => 3,
        Impl::OpenMpi => 2,
        _ => 4,
    }
}

const COLUMNS: [&str; 5] = ["madmpi", "MPICH", "Open MPI (OMPIO)", "Open MPI (ROMIO)", "one process (POSIX)"];

fn fs(m: &Measurement) -> &str {
    m.extra.get("fs").and_then(|v| v.as_str()).unwrap_or("")
}

fn text(m: &Measurement, key: &str) -> String {
    match m.extra.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

/// The files of one (place, pattern, size): (library, checksum) per library.
type FileGroup = ((String, String, u64), Vec<(String, String)>);

/// What differs between the libraries' files: one message per (place, pattern, size) whose
/// checksums are not all the same.
pub fn file_mismatches(ms: &[Measurement]) -> Vec<String> {
    let mut groups: Vec<FileGroup> = Vec::new();
    for m in ms.iter().filter(|m| m.bench == "io" && m.imp != Impl::Limit) {
        let Some(sum) = m.extra.get("checksum").map(|_| text(m, "checksum")) else { continue };
        let pattern = m.case.split('-').next().unwrap_or("").to_string();
        let key = (fs(m).to_string(), pattern, m.size);
        let who = format!("{}{}", m.imp.label(), if m.policy == ROMIO { " (ROMIO)" } else { "" });
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => {
                if !v.iter().any(|(w, _)| *w == who) {
                    v.push((who, sum));
                }
            }
            None => groups.push((key, vec![(who, sum)])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, v)| v.iter().any(|(_, s)| *s != v[0].1))
        .map(|((f, pattern, size), v)| {
            let list: Vec<String> = v.iter().map(|(w, s)| format!("{w} {s}")).collect();
            format!(
                "io: the libraries' files differ ({pattern}, {} on {f}): {}",
                human_bytes(size),
                list.join(", ")
            )
        })
        .collect()
}

/// Which rows a pattern's table has: its operations, and how its pieces are described.
fn pattern_ops(pattern: &str) -> &'static [&'static str] {
    if pattern == "strided" { &["read"] } else { &["write", "read"] }
}

fn pattern_title(pattern: &str) -> &'static str {
    match pattern {
        "rowblock" => {
            "MPI_File_write_all and MPI_File_read_all, a block of rows per rank (subarray view: contiguous)"
        }
        "checkerboard" => {
            "MPI_File_write_all and MPI_File_read_all, a 2 × 2 checkerboard (subarray view: pieces of half a row)"
        }
        _ => {
            "independent strided MPI_File_read_at, a block of columns per rank (vector view: pieces of a quarter \
             row; each library's data sieving)"
        }
    }
}

/// The stage's tables: per place and pattern, bandwidth per size and operation with min–max,
/// ours ÷ the best peer and ÷ the POSIX limit; then the runs that failed.
pub fn tables(all: &[Measurement]) -> Vec<Table> {
    let sel: Vec<&Measurement> = all.iter().filter(|m| m.bench == "io").collect();
    let mut out = Vec::new();
    let mut places: Vec<&str> = Vec::new();
    for m in &sel {
        if !places.contains(&fs(m)) {
            places.push(fs(m));
        }
    }
    for place in places {
        let here: Vec<&Measurement> = sel.iter().copied().filter(|m| fs(m) == place).collect();
        let fstype = here.first().map(|m| text(m, "fstype")).unwrap_or_default();
        let reps = here.iter().find_map(|m| m.extra_f64("reps"));
        for pattern in PATTERNS {
            let mine: Vec<&Measurement> =
                here.iter().copied().filter(|m| m.case.starts_with(&format!("{pattern}-"))).collect();
            if mine.is_empty() {
                continue;
            }
            let mut present = [false; 5];
            for m in &mine {
                present[column(m)] = true;
            }
            let limit_case = |op: &str| format!("posix-{op}");
            present[4] = here.iter().any(|m| m.imp == Impl::Limit);
            let cols: Vec<usize> = (0..5).filter(|&c| present[c]).collect();
            let pos = |c: usize| cols.iter().position(|&x| x == c);
            let mut sizes: Vec<u64> = mine.iter().map(|m| m.size).collect();
            sizes.sort();
            sizes.dedup();
            let mut t = Table {
                title: format!(
                    "MPI-IO on {place} ({fstype}), {}: MB/s, median (min–max){}, page cache (no sync timed), 4 \
                     ranks sharing 2 CPUs; ratio > 1: madmpi better",
                    pattern_title(pattern),
                    reps.map_or(String::new(), |r| format!(" of {r} repetitions"))
                ),
                row_head: "size, operation".into(),
                columns: cols.iter().map(|&c| COLUMNS[c].to_string()).collect(),
                unit: "MB/s".into(),
                ..Default::default()
            };
            for &size in &sizes {
                for op in pattern_ops(pattern) {
                    let case = format!("{pattern}-{op}");
                    let cell = |c: usize| -> Option<&Measurement> {
                        if c == 4 {
                            here.iter()
                                .copied()
                                .find(|m| m.imp == Impl::Limit && m.size == size && m.case == limit_case(op))
                        } else {
                            mine.iter().copied().find(|m| m.size == size && m.case == case && column(m) == c)
                        }
                    };
                    let found: Vec<Option<&Measurement>> = cols.iter().map(|&c| cell(c)).collect();
                    if found.iter().all(Option::is_none) {
                        continue;
                    }
                    let piece = found
                        .iter()
                        .flatten()
                        .find_map(|m| m.extra_f64("piece"))
                        .filter(|_| pattern != "rowblock")
                        .map_or(String::new(), |p| format!(" ({} pieces)", human_bytes(p as u64)));
                    t.rows.push((
                        format!("{} {op}{piece}", human_bytes(size)),
                        found.iter().map(|m| m.map(|m| m.stat.median)).collect(),
                    ));
                    t.ranges.push(found.iter().map(|m| m.map(|m| (m.stat.min, m.stat.max))).collect());
                }
            }
            if let Some(ours) = pos(0) {
                let peers: Vec<usize> = [1, 2, 3].into_iter().filter_map(pos).collect();
                if !peers.is_empty() {
                    t.best_ratios.push((ours, peers, "÷ best of MPICH, Open MPI".into()));
                }
                let romio: Vec<usize> = [1, 3].into_iter().filter_map(pos).collect();
                if pattern == "strided" && !romio.is_empty() {
                    t.best_ratios.push((ours, romio, "÷ best ROMIO".into()));
                }
                if let Some(l) = pos(4) {
                    t.best_ratios.push((ours, vec![l], "÷ one process".into()));
                }
            }
            out.push(t);
        }
    }
    let failures: Vec<&Measurement> = all.iter().filter(|m| m.bench == FAILED).collect();
    if !failures.is_empty() {
        let mut t = Table {
            title: "MPI-IO runs that failed (no figures for them above)".into(),
            row_head: "run: why".into(),
            unit: "failed".into(),
            ..Default::default()
        };
        for m in failures {
            let who = format!("{}{}", m.imp.label(), if m.policy == ROMIO { " (ROMIO)" } else { "" });
            t.rows.push((format!("{who}, {} on {}: {}", m.case, fs(m), text(m, "error")), vec![]));
        }
        out.push(t);
    }
    out
}

/// The curves of the plots: per place, pattern and operation, (file name, title, series of
/// bandwidth per size: each library column and the POSIX limit).
pub fn curves(all: &[Measurement]) -> Vec<(String, String, Vec<Series>)> {
    let sel: Vec<&Measurement> = all.iter().filter(|m| m.bench == "io").collect();
    let mut places: Vec<&str> = Vec::new();
    for m in &sel {
        if !places.contains(&fs(m)) {
            places.push(fs(m));
        }
    }
    let mut out = Vec::new();
    for place in places {
        for pattern in PATTERNS {
            for op in pattern_ops(pattern) {
                let case = format!("{pattern}-{op}");
                let mut series = Vec::new();
                for (c, name) in COLUMNS.iter().enumerate() {
                    let mut points: Vec<(f64, f64)> = sel
                        .iter()
                        .filter(|m| fs(m) == place && column(m) == c)
                        .filter(|m| if c == 4 { m.case == format!("posix-{op}") } else { m.case == case })
                        .map(|m| (m.size as f64, m.stat.median))
                        .collect();
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    if !points.is_empty() {
                        let name = if c == 4 { format!("limit: {name}") } else { name.to_string() };
                        series.push(Series { name, points });
                    }
                }
                if series.iter().any(|s| !s.name.starts_with("limit")) {
                    let what = match (pattern, *op) {
                        ("strided", _) => "strided independent read".to_string(),
                        (p, o) => format!("{p}, collective {o}"),
                    };
                    out.push((
                        format!("io-{pattern}-{op}-{place}.png"),
                        format!("MPI-IO on {place}: {what} (higher is better)"),
                        series,
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(case: &str, imp: Impl, policy: &str, place: &str, size: u64, v: f64) -> Measurement {
        Measurement::new("io", case, imp, "shm", size, Stat { median: v, min: v - 1.0, max: v + 1.0 }, "MB/s")
            .policy(policy)
            .with("fs", place)
            .with("fstype", "tmpfs")
            .with("piece", 1024.0)
            .with("checksum", "fnv:00000000000000ab")
    }

    #[test]
    fn open_mpi_runs_with_ompio_and_romio() {
        assert_eq!(
            variants(&crate::mpi::LIBS),
            [
                (Impl::Madmpi, None),
                (Impl::Mpich, None),
                (Impl::OpenMpi, None),
                (Impl::OpenMpi, Some("romio321"))
            ]
        );
        let o = Options::parse(["io".to_string()]).unwrap();
        assert_eq!(sizes(&o), FULL);
        assert_eq!(steps(&o), 2 * (1 + 3 * 4));
        assert_eq!(sizes(&Options::parse(["io".to_string(), "--quick".into()]).unwrap()), QUICK);
        assert_eq!(sizes(&Options::parse([]).unwrap()), IN_ALL);
        let o = Options::parse(["all", "--io-sizes", "2M"].map(String::from)).unwrap();
        assert_eq!(sizes(&o), [2 << 20]);
    }

    #[test]
    fn tables_show_ranges_the_best_peer_and_the_limit() {
        let mib = 1 << 20;
        let ms = vec![
            m("checkerboard-write", Impl::Madmpi, "adaptive", "tmpfs", mib, 800.0),
            m("checkerboard-write", Impl::Mpich, "default", "tmpfs", mib, 100.0),
            m("checkerboard-write", Impl::OpenMpi, "default", "tmpfs", mib, 400.0),
            m("checkerboard-write", Impl::OpenMpi, ROMIO, "tmpfs", mib, 1000.0),
            m("checkerboard-read", Impl::Madmpi, "adaptive", "tmpfs", mib, 900.0),
            Measurement::new(
                "io",
                "posix-write",
                Impl::Limit,
                "-",
                mib,
                Stat { median: 2000.0, min: 1.0, max: 3.0 },
                "MB/s",
            )
            .with("fs", "tmpfs"),
            m("strided-read", Impl::Madmpi, "adaptive", "disk", mib, 300.0),
            m("strided-read", Impl::Mpich, "default", "disk", mib, 200.0),
            m("strided-read", Impl::OpenMpi, "default", "disk", mib, 600.0),
        ];
        let t = tables(&ms);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].columns, COLUMNS);
        let text = t[0].render();
        assert!(
            text.contains("| one process (POSIX) | ÷ best of MPICH, Open MPI | ÷ one process |"),
            "{text}"
        );
        let row = text.lines().find(|l| l.starts_with("| 1 MiB write")).unwrap();
        assert_eq!(
            row,
            "| 1 MiB write (1 KiB pieces) | 800 (799–801) | 100 (99–101) | 400 (399–401) | 1000 (999–1001) | \
             2000 (1–3) | 0.80 | 0.40 |"
        );
        let row = text.lines().find(|l| l.starts_with("| 1 MiB read")).unwrap();
        assert_eq!(row, "| 1 MiB read (1 KiB pieces) | 900 (899–901) | - | - | - | - | - | - |");
        let strided = t[1].render();
        assert!(strided.starts_with("MPI-IO on disk (tmpfs), independent strided"), "{strided}");
        let row = strided.lines().find(|l| l.starts_with("| 1 MiB read")).unwrap();
        assert!(row.ends_with("| 0.50 | 1.50 |"), "{row}");
        assert_eq!(curves(&ms).len(), 3);
        assert!(file_mismatches(&ms).is_empty());
    }

    #[test]
    fn failures_and_differing_files_are_reported() {
        let place =
            Place { label: "tmpfs", dir: "/nonexistent/madbench-io-test".into(), fstype: "tmpfs".into() };
        let e =
            "the job failed (exit status: 1):\n# library MadMPI\nio: rank 2: MPI_File_open failed (13): no\n";
        assert_eq!(why(e), "the job failed (exit status: 1) io: rank 2: MPI_File_open failed (13): no");
        let ms = vec![failed("rowblock", Impl::Madmpi, None, &place, why(e))];
        let t = tables(&ms);
        assert_eq!(t.len(), 1);
        assert!(t[0].render().contains("| madmpi, rowblock on tmpfs: the job failed"), "{}", t[0].render());
        let mut other = m("rowblock-write", Impl::Mpich, "default", "tmpfs", 64, 1.0);
        other.extra.insert("checksum".into(), "fnv:00000000000000cd".into());
        let ms = vec![m("rowblock-write", Impl::Madmpi, "adaptive", "tmpfs", 64, 1.0), other];
        let d = file_mismatches(&ms);
        assert_eq!(d.len(), 1);
        assert!(
            d[0].contains("rowblock, 64 B on tmpfs") && d[0].contains("MPICH fnv:00000000000000cd"),
            "{}",
            d[0]
        );
    }

    #[test]
    fn the_limit_reads_back_what_it_wrote() {
        let dir = std::env::temp_dir().join(format!("madbench-io-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (w, r) = posix(&dir, 1 << 16, 2).unwrap();
        assert!(w.median > 0.0 && r.median > 0.0);
        assert!(!dir.join("madbench-io-posix.dat").exists());
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(fs_of(Path::new("/proc/self")).map(|f| f.1).as_deref(), Some("proc"));
    }
}
