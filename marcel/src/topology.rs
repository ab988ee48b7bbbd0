//! The machine topology as the two-level scheduler sees it.
//!
//! Owns: discovering the cores, packages, NUMA nodes and shared caches of the CPUs this process
//! may use (through hwloc, with a flat fallback built from the affinity mask), the distance
//! between two cores that orders work stealing, and parsing CPU lists such as `"0,2-3,8"`.
//!
//! Must not: pin or create threads, or change any affinity. It only describes the machine; the
//! scheduler pins one kernel thread per [`Core`] on its `os_cpu`.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::UnwindSafe;
use std::sync::OnceLock;

use hwloc2::{ObjectType, TopologyObject};

/// Largest CPU number accepted anywhere here (Linux's `NR_CPUS` is far below it). Bounds the
/// memory a CPU list or an affinity mask can make us allocate.
const MAX_CPU: usize = (1 << 20) - 1;

/// One core the scheduler may run a pinned kernel thread on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    /// Position in [`Topology::cores`].
    pub index: usize,
    /// OS CPU number to pin a kernel thread to: the first allowed PU of the core.
    pub os_cpu: usize,
    /// OS CPU numbers of this core's PUs that the process may use (sorted, never empty).
    pub pus: Vec<usize>,
    /// Logical package index (0-based, dense).
    pub package: usize,
    /// Logical NUMA node index (0-based, dense; 0 when hwloc reports no NUMA information).
    pub numa_node: usize,
    /// hwloc logical index of the L2 cache above this core, if known.
    pub l2: Option<usize>,
    /// hwloc logical index of the L3 cache above this core, if known.
    pub l3: Option<usize>,
}

/// Where a [`Topology`] came from.
#[derive(Clone, Debug)]
enum Source {
    Hwloc,
    /// Built on purpose by [`Topology::flat`].
    Flat,
    /// [`Topology::detect`] could not use hwloc, for the given reason.
    Fallback(String),
}

/// The cores the scheduler may use, with what they share.
#[derive(Clone, Debug)]
pub struct Topology {
    cores: Vec<Core>,
    source: Source,
}

impl Topology {
    /// Discovers the topology with hwloc, keeping only the CPUs in [`allowed_cpus`].
    ///
    /// Never panics: if hwloc fails (or `hwloc2` panics), returns the flat topology of
    /// [`allowed_cpus`] and records why in [`Topology::summary`]; [`Topology::from_hwloc`] is
    /// then false.
    pub fn detect() -> Topology {
        Topology::detect_with(allowed_cpus(), hwloc_cores)
    }

    /// [`Topology::detect`] with the discovery step as a parameter, so tests can make it fail.
    fn detect_with(
        allowed: &[usize],
        discover: impl FnOnce(&[usize]) -> Result<Vec<Core>, String> + UnwindSafe,
    ) -> Topology {
        // Only a panic inside `discover` is caught; the panic hook still reports it as usual.
        let why = match std::panic::catch_unwind(|| discover(allowed)) {
            Ok(Ok(cores)) => return Topology { cores, source: Source::Hwloc },
            Ok(Err(why)) => why,
            Err(payload) => format!("hwloc2 panicked: {}", panic_message(payload.as_ref())),
        };
        Topology { cores: flat_cores(allowed), source: Source::Fallback(why) }
    }

    /// One core per listed CPU (sorted, duplicates dropped), all in one package and one NUMA
    /// node, with no cache information.
    pub fn flat(os_cpus: &[usize]) -> Topology {
        Topology { cores: flat_cores(os_cpus), source: Source::Flat }
    }

    /// The usable cores, in hwloc's logical order (`cores()[i].index == i`).
    pub fn cores(&self) -> &[Core] {
        &self.cores
    }

    /// Number of packages with at least one usable core.
    pub fn packages(&self) -> usize {
        self.cores.iter().map(|c| c.package).collect::<BTreeSet<_>>().len()
    }

    /// Number of NUMA nodes with at least one usable core.
    pub fn numa_nodes(&self) -> usize {
        self.cores.iter().map(|c| c.numa_node).collect::<BTreeSet<_>>().len()
    }

    /// True when hwloc described this topology (false for [`Topology::flat`] and the fallback).
    pub fn from_hwloc(&self) -> bool {
        matches!(self.source, Source::Hwloc)
    }

    /// Keeps only the cores having at least one PU in `os_cpus` (re-indexing `index`, and keeping
    /// only allowed PUs). Error if none remains.
    pub fn restrict(&self, os_cpus: &[usize]) -> Result<Topology, String> {
        let keep: BTreeSet<usize> = os_cpus.iter().copied().collect();
        let mut cores: Vec<Core> = Vec::new();
        for core in &self.cores {
            let pus: Vec<usize> = core.pus.iter().copied().filter(|p| keep.contains(p)).collect();
            if let Some(&os_cpu) = pus.first() {
                cores.push(Core { index: cores.len(), os_cpu, pus, ..core.clone() });
            }
        }
        if cores.is_empty() {
            let all: Vec<usize> = self.cores.iter().flat_map(|c| c.pus.iter().copied()).collect();
            return Err(format!(
                "none of the CPUs [{}] is usable (usable CPUs: [{}])",
                format_cpu_list(os_cpus),
                format_cpu_list(&all)
            ));
        }
        // Dropped cores may leave holes in the package and NUMA numbering.
        let packages = dense(&cores.iter().map(|c| c.package).collect::<Vec<_>>());
        let nodes = dense(&cores.iter().map(|c| c.numa_node).collect::<Vec<_>>());
        for ((core, package), node) in cores.iter_mut().zip(packages).zip(nodes) {
            core.package = package;
            core.numa_node = node;
        }
        Ok(Topology { cores, source: self.source.clone() })
    }

    /// 0 = same core, 1 = share an L2, 2 = share an L3, 3 = same NUMA node, 4 = same package,
    /// 5 = otherwise.
    ///
    /// # Panics
    /// If `a` or `b` is not a [`Core::index`] of this topology.
    pub fn distance(&self, a: usize, b: usize) -> u32 {
        let (x, y) = (&self.cores[a], &self.cores[b]);
        let shared = |p: Option<usize>, q: Option<usize>| p.is_some() && p == q;
        if a == b {
            0
        } else if shared(x.l2, y.l2) {
            1
        } else if shared(x.l3, y.l3) {
            2
        } else if x.numa_node == y.numa_node {
            3
        } else if x.package == y.package {
            4
        } else {
            5
        }
    }

    /// All other core indices sorted by distance from `from` (nearest first; ties by index).
    ///
    /// # Panics
    /// If `from` is not a [`Core::index`] of this topology.
    pub fn steal_order(&self, from: usize) -> Vec<usize> {
        assert!(from < self.cores.len(), "core {from} out of range ({} cores)", self.cores.len());
        let mut order: Vec<usize> = (0..self.cores.len()).filter(|&i| i != from).collect();
        order.sort_by_key(|&i| (self.distance(from, i), i));
        order
    }

    /// A one-line human summary, e.g.
    /// `"2 cores (2 PUs), 1 package, 1 NUMA node, L2 per core, L3 shared by 2 [hwloc]"`; the tag in
    /// brackets says where it came from (`hwloc`, `flat`, or `flat fallback: <why hwloc failed>`).
    pub fn summary(&self) -> String {
        let pus: usize = self.cores.iter().map(|c| c.pus.len()).sum();
        let mut parts = vec![
            format!("{} ({})", plural(self.cores.len(), "core"), plural(pus, "PU")),
            plural(self.packages(), "package"),
            plural(self.numa_nodes(), "NUMA node"),
        ];
        parts.extend(cache_sharing("L2", self.cores.iter().filter_map(|c| c.l2)));
        parts.extend(cache_sharing("L3", self.cores.iter().filter_map(|c| c.l3)));
        let source = match &self.source {
            Source::Hwloc => "hwloc".to_string(),
            Source::Flat => "flat".to_string(),
            Source::Fallback(why) => format!("flat fallback: {why}"),
        };
        format!("{} [{source}]", parts.join(", "))
    }
}

/// The OS CPUs this process may run on (sorted), computed once per process from the affinity
/// mask of the thread making the first call (the scheduler calls it before pinning anything).
/// Falls back to `0..available_parallelism` if `sched_getaffinity` fails.
pub fn allowed_cpus() -> &'static [usize] {
    static ALLOWED: OnceLock<Vec<usize>> = OnceLock::new();
    ALLOWED.get_or_init(|| {
        calling_thread_affinity()
            .unwrap_or_else(|| (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect())
    })
}

/// Parses "0,2-3,8" (whitespace tolerant) into sorted unique CPU numbers.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    if s.trim().is_empty() {
        return Err(format!("empty CPU list {s:?}"));
    }
    let mut cpus = BTreeSet::new();
    for item in s.split(',') {
        let item = item.trim();
        let bad = |why: String| format!("bad CPU list {s:?}: {item:?} {why}");
        if item.is_empty() {
            return Err(bad("is an empty item".to_string()));
        }
        let number = |text: &str| -> Result<usize, String> {
            let text = text.trim();
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(format!("has {text:?}, which is not a CPU number")));
            }
            match text.parse::<usize>() {
                Ok(n) if n <= MAX_CPU => Ok(n),
                _ => Err(bad(format!("has {text}, above the largest CPU number {MAX_CPU}"))),
            }
        };
        let (first, last) = match item.split_once('-') {
            Some((first, last)) => (number(first)?, number(last)?),
            None => (number(item)?, number(item)?),
        };
        if first > last {
            return Err(bad("is a decreasing range".to_string()));
        }
        cpus.extend(first..=last);
    }
    Ok(cpus.into_iter().collect())
}

/// Formats CPU numbers the way [`parse_cpu_list`] reads them ("0,2-3,8").
fn format_cpu_list(cpus: &[usize]) -> String {
    let sorted: BTreeSet<usize> = cpus.iter().copied().collect();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for cpu in sorted {
        match ranges.last_mut() {
            Some((_, last)) if *last + 1 == cpu => *last = cpu,
            _ => ranges.push((cpu, cpu)),
        }
    }
    let text: Vec<String> =
        ranges.into_iter().map(|(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    text.join(",")
}

/// "L3 shared by 2" (or "by 1-4" when uneven, or "L2 per core"), given the cache of each core
/// that has one; None when no core has one.
fn cache_sharing(name: &str, caches: impl Iterator<Item = usize>) -> Option<String> {
    // Number of our cores under each cache of this level.
    let mut sharers: BTreeMap<usize, usize> = BTreeMap::new();
    for cache in caches {
        *sharers.entry(cache).or_default() += 1;
    }
    let min = *sharers.values().min()?;
    let max = *sharers.values().max()?;
    Some(match (min, max) {
        (_, 1) => format!("{name} per core"),
        _ if min == max => format!("{name} shared by {max}"),
        _ => format!("{name} shared by {min}-{max}"),
    })
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

/// Maps each value to its rank among the distinct values: [7, 3, 7] -> [1, 0, 1].
fn dense<T: Ord>(values: &[T]) -> Vec<usize> {
    let distinct: BTreeSet<&T> = values.iter().collect();
    let rank: BTreeMap<&T, usize> = distinct.into_iter().zip(0..).collect();
    values.iter().map(|v| rank[v]).collect()
}

fn flat_cores(os_cpus: &[usize]) -> Vec<Core> {
    let cpus: BTreeSet<usize> = os_cpus.iter().copied().collect();
    cpus.into_iter()
        .enumerate()
        .map(|(index, cpu)| Core {
            index,
            os_cpu: cpu,
            pus: vec![cpu],
            package: 0,
            numa_node: 0,
            l2: None,
            l3: None,
        })
        .collect()
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "unknown panic payload"
    }
}

/// Reads the cores from hwloc, keeping only the PUs in `allowed` (sorted).
///
/// Does not ask hwloc2 for NUMA-node objects: hwloc 2 keeps them out of the main tree and
/// hwloc2 2.2 mistakes their virtual depth for a normal one and panics. The NUMA node of a core
/// comes from its nodeset instead. Object types are compared with `matches!`, not with hwloc2's
/// `PartialEq` (which calls into hwloc).
fn hwloc_cores(allowed: &[usize]) -> Result<Vec<Core>, String> {
    let topo = hwloc2::Topology::new().ok_or("hwloc could not load the topology")?;
    // Some VMs expose no Core objects: then each PU is a core.
    let units: Vec<&TopologyObject> = match topo.objects_with_type(&ObjectType::Core) {
        Ok(cores) if !cores.is_empty() => cores,
        _ => topo
            .objects_with_type(&ObjectType::PU)
            .map_err(|e| format!("hwloc reports neither cores nor PUs ({e:?})"))?,
    };

    struct Found {
        pus: Vec<usize>,
        package: Option<u32>,
        numa: u32,
        l2: Option<usize>,
        l3: Option<usize>,
    }
    let mut found: Vec<Found> = Vec::new();
    for unit in units {
        let Some(cpuset) = unit.cpuset() else { continue };
        // Walking `allowed` (finite) rather than the cpuset, which hwloc allows to be infinite.
        let pus: Vec<usize> = allowed.iter().copied().filter(|&cpu| cpuset.is_set(cpu as u32)).collect();
        if pus.is_empty() {
            continue;
        }
        // First node of the nodeset; an empty one (no NUMA information) counts as node 0.
        let numa = unit.nodeset().map_or(-1, |nodes| nodes.first()).max(0) as u32;
        let (mut package, mut l2, mut l3) = (None, None, None);
        let mut ancestor = unit.parent();
        while let Some(obj) = ancestor {
            let slot = match obj.object_type() {
                ObjectType::Package => Some(&mut package),
                ObjectType::L2Cache => Some(&mut l2),
                ObjectType::L3Cache => Some(&mut l3),
                _ => None,
            };
            if let Some(slot) = slot {
                slot.get_or_insert(obj.logical_index()); // the nearest one wins
            }
            ancestor = obj.parent();
        }
        let l2 = l2.map(|i| i as usize);
        let l3 = l3.map(|i| i as usize);
        found.push(Found { pus, package, numa, l2, l3 });
    }
    if found.is_empty() {
        return Err(format!("no hwloc core has a PU among the allowed CPUs [{}]", format_cpu_list(allowed)));
    }

    let packages = dense(&found.iter().map(|f| f.package).collect::<Vec<_>>());
    let nodes = dense(&found.iter().map(|f| f.numa).collect::<Vec<_>>());
    let cores = found
        .into_iter()
        .zip(packages.into_iter().zip(nodes))
        .enumerate()
        .map(|(index, (f, (package, numa_node)))| Core {
            index,
            os_cpu: f.pus[0],
            pus: f.pus,
            package,
            numa_node,
            l2: f.l2,
            l3: f.l3,
        })
        .collect();
    Ok(cores)
}

/// The affinity mask of the calling thread, or None if the kernel will not tell.
fn calling_thread_affinity() -> Option<Vec<usize>> {
    const WORD_BITS: usize = libc::c_ulong::BITS as usize;
    // Start with glibc's cpu_set_t (1024 CPUs); grow while the kernel says it is too small.
    let mut words = std::mem::size_of::<libc::cpu_set_t>() / std::mem::size_of::<libc::c_ulong>();
    loop {
        let mut mask: Vec<libc::c_ulong> = vec![0; words];
        let bytes = words * std::mem::size_of::<libc::c_ulong>();
        // SAFETY: `mask` is a live, writable buffer of `bytes` bytes (at least the size of a
        // cpu_set_t, which is itself an array of c_ulong), and the call writes at most `bytes`.
        let rc = unsafe { libc::sched_getaffinity(0, bytes, mask.as_mut_ptr().cast()) };
        if rc == 0 {
            let cpus: Vec<usize> = (0..words * WORD_BITS)
                .filter(|&cpu| mask[cpu / WORD_BITS] >> (cpu % WORD_BITS) & 1 == 1)
                .collect();
            return (!cpus.is_empty()).then_some(cpus);
        }
        let too_small = std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL);
        if !too_small || words * WORD_BITS > MAX_CPU {
            return None;
        }
        words *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(index: usize, pus: &[usize], package: usize, numa: usize, l2: usize, l3: usize) -> Core {
        Core {
            index,
            os_cpu: pus[0],
            pus: pus.to_vec(),
            package,
            numa_node: numa,
            l2: Some(l2),
            l3: Some(l3),
        }
    }

    /// Package 0 { NUMA 0 { L3 0 { L2 0 { c0, c1 }, L2 1 { c2 } }, L3 1 { c3 } },
    ///             NUMA 1 { L3 2 { c4 } } },
    /// package 1 { NUMA 2 { L3 3 { c5 } } }; two PUs per core (SMT).
    fn layered() -> Topology {
        let cores = vec![
            core(0, &[0, 8], 0, 0, 0, 0),
            core(1, &[1, 9], 0, 0, 0, 0),
            core(2, &[2, 10], 0, 0, 1, 0),
            core(3, &[3, 11], 0, 0, 2, 1),
            core(4, &[4, 12], 0, 1, 3, 2),
            core(5, &[5, 13], 1, 2, 4, 3),
        ];
        Topology { cores, source: Source::Hwloc }
    }

    #[test]
    fn parse_good_lists() {
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
        assert_eq!(parse_cpu_list("0,2-3,8"), Ok(vec![0, 2, 3, 8]));
        assert_eq!(parse_cpu_list(" 8 , 0 - 2 ,\t1\n"), Ok(vec![0, 1, 2, 8]));
        assert_eq!(parse_cpu_list("3-3,3"), Ok(vec![3]));
        assert_eq!(parse_cpu_list("007"), Ok(vec![7]));
    }

    #[test]
    fn parse_bad_lists_quote_the_bad_part() {
        for (input, quoted) in [
            ("", "\"\""),
            ("  ", "\"  \""),
            ("x", "\"x\""),
            ("0,,2", "\"\""),
            ("0,", "\"\""),
            ("3-1", "\"3-1\""),
            ("1-", "\"1-\""),
            ("-1", "\"-1\""),
            ("1-2-3", "\"2-3\""),
            ("+1", "\"+1\""),
            ("0,2a", "\"2a\""),
            ("99999999999", "99999999999"),
            ("99999999999999999999999", "99999999999999999999999"),
        ] {
            let err = parse_cpu_list(input).expect_err(input);
            assert!(err.contains(quoted), "error for {input:?} does not quote {quoted}: {err}");
        }
    }

    #[test]
    fn format_round_trips() {
        assert_eq!(format_cpu_list(&[8, 0, 3, 2, 2]), "0,2-3,8");
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(parse_cpu_list(&format_cpu_list(&[1, 2, 3, 5])), Ok(vec![1, 2, 3, 5]));
    }

    #[test]
    fn flat_topology() {
        let t = Topology::flat(&[3, 1, 2, 1]);
        let cpus: Vec<usize> = t.cores().iter().map(|c| c.os_cpu).collect();
        assert_eq!(cpus, [1, 2, 3]);
        for (i, c) in t.cores().iter().enumerate() {
            assert_eq!((c.index, c.pus.as_slice(), c.package, c.numa_node), (i, &[c.os_cpu][..], 0, 0));
            assert_eq!((c.l2, c.l3), (None, None));
        }
        assert_eq!((t.packages(), t.numa_nodes(), t.from_hwloc()), (1, 1, false));
        assert_eq!(t.distance(1, 1), 0);
        assert_eq!(t.distance(0, 2), 3);
        assert_eq!(t.steal_order(1), [0, 2]);
        assert_eq!(t.steal_order(2), [0, 1]);
        assert_eq!(t.summary(), "3 cores (3 PUs), 1 package, 1 NUMA node [flat]");
        assert!(Topology::flat(&[4]).steal_order(0).is_empty());
    }

    #[test]
    fn distances_follow_the_hierarchy() {
        let t = layered();
        let from0: Vec<u32> = (0..6).map(|b| t.distance(0, b)).collect();
        assert_eq!(from0, [0, 1, 2, 3, 4, 5]);
        for a in 0..6 {
            for b in 0..6 {
                assert_eq!(t.distance(a, b), t.distance(b, a));
            }
        }
        assert_eq!(t.steal_order(0), [1, 2, 3, 4, 5]);
        assert_eq!(t.steal_order(5), [0, 1, 2, 3, 4]);
        // From c3: c0, c1, c2 share its NUMA node (3), c4 its package (4), c5 nothing (5).
        assert_eq!(t.steal_order(3), [0, 1, 2, 4, 5]);
        assert_eq!(t.packages(), 2);
        assert_eq!(t.numa_nodes(), 3);
        assert_eq!(
            t.summary(),
            "6 cores (12 PUs), 2 packages, 3 NUMA nodes, L2 shared by 1-2, L3 shared by 1-3 [hwloc]"
        );
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn steal_order_rejects_unknown_core() {
        Topology::flat(&[0, 1]).steal_order(2);
    }

    #[test]
    fn restrict_keeps_reindexes_and_filters() {
        let t = layered();
        // c1 through its SMT sibling only, c4 fully, c5 not at all; 42 is not in the machine.
        let r = t.restrict(&[9, 4, 12, 42]).unwrap();
        assert_eq!(r.cores().len(), 2);
        assert_eq!(r.cores()[0], Core { index: 0, os_cpu: 9, pus: vec![9], ..t.cores()[1].clone() });
        assert_eq!(r.cores()[1], Core { index: 1, pus: vec![4, 12], ..t.cores()[4].clone() });
        assert!(r.from_hwloc());
        assert_eq!(r.distance(0, 1), 4);
        assert_eq!(r.steal_order(1), [0]);

        // Package and NUMA numbering stay dense once cores are dropped.
        let r = t.restrict(&[4, 5]).unwrap();
        let where_: Vec<(usize, usize)> = r.cores().iter().map(|c| (c.package, c.numa_node)).collect();
        assert_eq!(where_, [(0, 0), (1, 1)]);
        assert_eq!((r.packages(), r.numa_nodes()), (2, 2));

        let err = t.restrict(&[42, 43]).unwrap_err();
        assert!(err.contains("42-43") && err.contains("0-5,8-13"), "{err}");
        assert!(t.restrict(&[]).is_err());
        assert!(!Topology::flat(&[0, 1]).restrict(&[1]).unwrap().from_hwloc());
    }

    #[test]
    fn detect_falls_back_to_flat() {
        let t = Topology::detect_with(&[2, 5], |_| panic!("boom"));
        assert_eq!(t.cores(), Topology::flat(&[2, 5]).cores());
        assert!(!t.from_hwloc());
        assert_eq!(
            t.summary(),
            "2 cores (2 PUs), 1 package, 1 NUMA node [flat fallback: hwloc2 panicked: boom]"
        );

        let t = Topology::detect_with(&[0], |_| Err("no hwloc".to_string()));
        assert_eq!(t.summary(), "1 core (1 PU), 1 package, 1 NUMA node [flat fallback: no hwloc]");

        let t = Topology::detect_with(&[0], |_| Ok(layered().cores));
        assert!(t.from_hwloc());
    }

    #[test]
    fn allowed_cpus_is_sorted_unique_and_stable() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
        assert!(std::ptr::eq(cpus, allowed_cpus()));
    }

    #[test]
    fn detect_finds_the_allowed_cores() {
        let t = Topology::detect();
        println!("{}", t.summary());
        let allowed = allowed_cpus();
        assert!(!t.cores().is_empty());
        let mut seen = BTreeSet::new();
        for (i, c) in t.cores().iter().enumerate() {
            assert_eq!(c.index, i);
            assert!(allowed.contains(&c.os_cpu), "{c:?} not in {allowed:?}");
            assert_eq!(c.os_cpu, c.pus[0]);
            for pu in &c.pus {
                assert!(allowed.contains(pu) && seen.insert(*pu), "{c:?}");
            }
            assert!(c.package < t.packages() && c.numa_node < t.numa_nodes());
        }
        assert_eq!(t.steal_order(0).len(), t.cores().len() - 1);
    }
}
