//! The layering of madmpi's modules, read from its sources: no two top-level modules import each
//! other, directly or through a cycle, and each imports only modules of its layer or below
//! ([`LAYERS`]). A module added to `src/` must be given a layer here.
//!
//! Read from `src/lib.rs` down the `mod` declarations; what counts as an import is every path
//! through `crate::` (grouped ones too) or `super::` out of the top-level module, outside
//! comments, strings and test code (`#[cfg(test)]` modules, inline or in their own files: the
//! tests' harness may use anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules, from the bottom layer up.
const LAYERS: &[&[&str]] = &[
    // Plain data and the ABI.
    &["abi", "attr", "datatype", "error", "grequest", "group", "info", "loom", "node_shm", "op"],
    // Communicators: the features above keep their state in them without being named.
    &["comm"],
    // One request type; the kinds other modules run are handed to it.
    &["request"],
    // Operations.
    &["coll", "ft", "p2p", "partitioned", "rma", "topo"],
    // What one C call runs, communicators made otherwise, files, MPI_T.
    &["comm_ctor", "dynamic", "intercomm", "io", "operation", "tools"],
    // The environment, which starts everything.
    &["env", "session"],
];

type Graph = BTreeMap<String, BTreeSet<String>>;

/// `src` without comments, string and character literals (their contents could name modules or
/// hold braces); lifetimes stay.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let mut depth = 0;
            while i < b.len() {
                if src[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if src[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if let Some(len) = raw_string(rest) {
            i += len;
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if let Some(len) = char_literal(rest) {
            i += len;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of the raw string literal `s` starts with (`r"..."`, `r#"..."#`, `br"..."`).
fn raw_string(s: &str) -> Option<usize> {
    let t = s.strip_prefix('b').unwrap_or(s).strip_prefix('r')?;
    let hashes = t.len() - t.trim_start_matches('#').len();
    let body = t[hashes..].strip_prefix('"')?;
    let end = body.find(&format!("\"{}", "#".repeat(hashes)))?;
    Some(s.len() - body.len() + end + 1 + hashes)
}

/// The length of the character literal `s` starts with, if it is one (not a lifetime).
fn char_literal(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.first() != Some(&b'\'') {
        return None;
    }
    if b.get(1) == Some(&b'\\') {
        return s[2..].find('\'').map(|k| k + 3);
    }
    let c = s[1..].chars().next()?;
    (s[1 + c.len_utf8()..].starts_with('\'')).then_some(2 + c.len_utf8())
}

/// What a file declares and uses: its child modules' names (`mod x;`, not test ones) and the
/// paths it names, each as the list of its segments up to the first non-module one.
struct Parsed {
    children: Vec<String>,
    paths: Vec<Vec<String>>,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Removes `#[cfg(test)] mod x { ... }` blocks and notes the `mod x;` declarations, test ones
/// apart, from stripped source.
fn parse(stripped: &str) -> Parsed {
    let mut children = Vec::new();
    let mut code = String::new();
    let mut rest = stripped;
    while let Some(at) = rest.find("mod ") {
        let (before, after) = rest.split_at(at);
        let word_start = before.chars().last().is_none_or(|c| !is_ident(c));
        let name: String = after[4..].trim_start().chars().take_while(|&c| is_ident(c)).collect();
        let after_name = after[4..].trim_start()[name.len()..].trim_start();
        let test = before
            .trim_end()
            .trim_end_matches("pub(crate)")
            .trim_end()
            .trim_end_matches("pub")
            .ends_with("#[cfg(test)]");
        code.push_str(before);
        if !word_start || name.is_empty() {
            code.push_str("mod ");
            rest = &after[4..];
            continue;
        }
        if let Some(tail) = after_name.strip_prefix(';') {
            if !test {
                children.push(name);
            }
            rest = tail;
        } else if test && after_name.starts_with('{') {
            let mut depth = 0;
            let mut end = after_name.len();
            for (k, c) in after_name.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = &after_name[end..];
        } else {
            code.push_str("mod ");
            rest = &after[4..];
        }
    }
    code.push_str(rest);
    Parsed { children, paths: paths(&code) }
}

/// Every path starting with `crate` or `super` in `code`, with the groups of `use` trees
/// expanded one level (`crate::{a, b::c}` gives `crate::a` and `crate::b`).
fn paths(code: &str) -> Vec<Vec<String>> {
    paths_from(code, |w| w == "crate" || w == "super")
}

/// Every path of `code` whose first word `first` accepts, groups expanded as in [`paths`].
fn paths_from(code: &str, first: impl Fn(&str) -> bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !is_ident(chars[i - 1]) && chars[i - 1] != ':';
        let word: String = chars[i..].iter().take_while(|&&c| is_ident(c)).collect();
        if word.is_empty() {
            i += 1;
            continue;
        }
        if !starts_word || !first(&word) {
            i += word.len();
            continue;
        }
        let mut segs = vec![word.clone()];
        let mut j = i + word.len();
        loop {
            let at = |k: usize| chars.get(k).copied();
            if at(j) == Some(':') && at(j + 1) == Some(':') {
                j += 2;
                if at(j) == Some('{') {
                    let close = chars[j..].iter().position(|&c| c == '}').map_or(chars.len(), |k| j + k);
                    let inner: String = chars[j + 1..close].iter().collect();
                    for item in inner.split(',') {
                        let first: String = item.trim().chars().take_while(|&c| is_ident(c)).collect();
                        if !first.is_empty() && first != "self" {
                            let mut p = segs.clone();
                            p.push(first);
                            out.push(p);
                        } else if first == "self" {
                            out.push(segs.clone());
                        }
                    }
                    j = close;
                    segs.clear();
                    break;
                }
                let next: String = chars[j..].iter().take_while(|&&c| is_ident(c)).collect();
                if next.is_empty() {
                    break;
                }
                j += next.len();
                segs.push(next);
            } else {
                break;
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
        i = j.max(i + 1);
    }
    out
}

/// The top-level module a path names from the module at `here` (its path from the crate root),
/// if it leaves `here`'s top-level module; `None` otherwise.
fn target(here: &[String], path: &[String]) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let abs: Vec<&String> = if first == "crate" {
        rest.iter().collect()
    } else {
        let ups = path.iter().take_while(|s| *s == "super").count();
        let base = here.len().checked_sub(ups)?;
        here[..base].iter().chain(&path[ups..]).collect()
    };
    let top = abs.first()?;
    (here.first() != Some(*top) && top.chars().all(is_ident)).then(|| top.to_string())
}

/// The file of module `name` declared in `file` (at module path `at`).
fn child_file(file: &Path, at: &[String], name: &str) -> PathBuf {
    let dir = file.parent().expect("a file in a directory");
    let stem = file.file_stem().and_then(|s| s.to_str()).expect("a named file");
    let dir = if at.is_empty() || stem == "mod" { dir.to_path_buf() } else { dir.join(stem) };
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() { flat } else { dir.join(name).join("mod.rs") }
}

/// The import graph between top-level modules, from the crate root file `lib`.
fn graph(lib: &Path) -> Graph {
    let mut g = Graph::new();
    let mut todo = vec![(lib.to_path_buf(), Vec::<String>::new())];
    while let Some((file, at)) = todo.pop() {
        let src = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let parsed = parse(&strip(&src));
        for name in parsed.children {
            let mut sub = at.clone();
            sub.push(name.clone());
            if at.is_empty() {
                g.entry(name.clone()).or_default();
            }
            todo.push((child_file(&file, &at, &name), sub));
        }
        if at.is_empty() {
            continue;
        }
        for p in &parsed.paths {
            if let Some(t) = target(&at, p) {
                g.entry(at[0].clone()).or_default().insert(t);
            }
        }
    }
    g
}

/// A cycle of `g` (its modules in order), if there is one.
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        g: &Graph,
        m: &str,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(k) = stack.iter().position(|s| s == m) {
            return Some(stack[k..].to_vec());
        }
        if done.contains(m) {
            return None;
        }
        stack.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, d, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys().find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}

fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&m))
}

fn madmpi_graph() -> Graph {
    graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
}

#[test]
fn no_two_modules_import_each_other() {
    let g = madmpi_graph();
    assert!(g.len() > 10 && g["coll"].contains("comm"), "the sources were read: {g:?}");
    if let Some(c) = cycle(&g) {
        panic!("modules import each other in a cycle: {} -> {}", c.join(" -> "), c[0]);
    }
}

#[test]
fn each_module_imports_only_its_layer_and_below() {
    let g = madmpi_graph();
    for (m, deps) in &g {
        let Some(own) = layer_of(m) else { panic!("module `{m}` has no layer in LAYERS") };
        for d in deps {
            let theirs = layer_of(d).unwrap_or_else(|| panic!("`{m}` imports `{d}`, which has no layer"));
            assert!(theirs <= own, "`{m}` (layer {own}) imports `{d}` (layer {theirs}, above it)");
        }
    }
    // The communicator holds the features' state without naming them.
    assert!(g["comm"].iter().all(|d| layer_of(d) == Some(0)), "comm imports {:?}", g["comm"]);
}

#[test]
fn the_reader_finds_imports_and_cycles() {
    let src = r#"
        use crate::alpha::{self, X};
        use crate::{beta, gamma::Y};
        // crate::in_comment
        let s = "crate::in_string";
        fn f<'a>(c: char) -> bool { c == '{' && super::delta::z() }
        #[cfg(test)]
        mod tests { use crate::only_in_tests; fn g() { let _ = '}'; } }
        #[cfg(test)]
        mod sim;
        mod child;
    "#;
    let parsed = parse(&strip(src));
    assert_eq!(parsed.children, ["child"]);
    let here = ["top".to_string(), "file".to_string()];
    let found: BTreeSet<String> = parsed.paths.iter().filter_map(|p| target(&here, p)).collect();
    let want: BTreeSet<String> = ["alpha", "beta", "gamma"].map(String::from).into();
    assert_eq!(found, want, "super::delta is inside `top`");
    let at_top = ["top".to_string()];
    assert_eq!(target(&at_top, &["super".into(), "delta".into()]), Some("delta".into()));

    let rel = relative_paths("use self::x::Y; child::f(); other::g(); a::child::h();", &["child".into()]);
    assert_eq!(rel, [vec!["self", "x", "Y"], vec!["self", "child", "f"]]);
    let known: BTreeSet<Vec<String>> =
        [vec![], vec!["a".to_string()], vec!["a".to_string(), "b".to_string()]].into();
    let here = ["a".to_string(), "b".to_string()];
    let t = |p: &[&str]| target_file(&here, &p.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &known);
    assert_eq!(t(&["super", "Thing"]), Some(vec!["a".to_string()]));
    assert_eq!(t(&["crate", "a", "b", "c", "D"]), Some(here.to_vec()));
    assert_eq!(t(&["crate", "z"]), Some(vec![]));
    let v = |s: &str| s.split('/').map(String::from).collect::<Vec<_>>();
    let mut fg: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    fg.entry(v("a")).or_default().insert(v("b"));
    fg.entry(v("b")).or_default().insert(v("c"));
    fg.entry(v("c")).or_default().insert(v("a"));
    fg.entry(v("d")).or_default().insert(v("a"));
    let t = tangles(&fg);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].iter().cloned().collect::<BTreeSet<_>>(), [v("a"), v("b"), v("c")].into());

    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(cycle(&g).map(|c| c.len()), Some(3));
}

/// A source file of the crate: its module path and the paths it names (any start: `crate`,
/// `super`, `self` or one of its child modules).
struct FileModule {
    at: Vec<String>,
    folder: PathBuf,
    paths: Vec<Vec<String>>,
}

/// Every file module of the crate whose root file is `lib`, with its folder relative to `src`.
fn file_modules(lib: &Path) -> Vec<FileModule> {
    let src = lib.parent().expect("lib.rs in src");
    let mut out = Vec::new();
    let mut todo = vec![(lib.to_path_buf(), Vec::<String>::new())];
    while let Some((file, at)) = todo.pop() {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let stripped = strip(&text);
        let parsed = parse(&stripped);
        for name in &parsed.children {
            let mut sub = at.clone();
            sub.push(name.clone());
            todo.push((child_file(&file, &at, name), sub));
        }
        let mut paths = parsed.paths;
        paths.extend(relative_paths(&stripped, &parsed.children));
        let folder = file.parent().and_then(|d| d.strip_prefix(src).ok()).expect("under src").to_path_buf();
        out.push(FileModule { at, folder, paths });
    }
    out
}

/// Paths in `code` starting with `self` or with one of `children` (a module's own submodules
/// named without `crate::`; only followed by `::`, not a variable of the same name), as
/// `self`-rooted paths.
fn relative_paths(code: &str, children: &[String]) -> Vec<Vec<String>> {
    let found = paths_from(code, |w| w == "self" || children.iter().any(|c| c == w));
    found
        .into_iter()
        .filter(|p| p.len() > 1)
        .map(|p| if p[0] == "self" { p } else { std::iter::once("self".to_string()).chain(p).collect() })
        .collect()
}

/// The file module a path names from module `here`: the longest prefix of its absolute form
/// that is a module with a file.
fn target_file(here: &[String], path: &[String], known: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let abs: Vec<String> = match first.as_str() {
        "crate" => rest.to_vec(),
        "self" => here.iter().chain(rest).cloned().collect(),
        _ => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = here.len().checked_sub(ups)?;
            here[..base].iter().chain(&path[ups..]).cloned().collect()
        }
    };
    (0..=abs.len()).rev().map(|k| abs[..k].to_vec()).find(|p| known.contains(p))
}

/// The strongly connected components of `g` with more than one node (Tarjan).
fn tangles(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct T<'a> {
        g: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Vec<String>) {
        let k = t.index.len();
        t.index.insert(v, (k, k));
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let Some((w, _)) = t.g.get_key_value(w) else { continue };
            if !t.index.contains_key(w) {
                visit(t, w);
                let low = t.index[w].1.min(t.index[v].1);
                t.index.get_mut(v).expect("visited").1 = low;
            } else if t.on.contains(w) {
                let low = t.index[w].0.min(t.index[v].1);
                t.index.get_mut(v).expect("visited").1 = low;
            }
        }
        if t.index[v].0 == t.index[v].1 {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                scc.push(w.clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                t.out.push(scc);
            }
        }
    }
    let mut t = T { g, index: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_cycle_between_files_of_different_folders() {
    let files = file_modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"));
    let known: BTreeSet<Vec<String>> = files.iter().map(|f| f.at.clone()).collect();
    let folder: BTreeMap<Vec<String>, PathBuf> =
        files.iter().map(|f| (f.at.clone(), f.folder.clone())).collect();
    let mut g: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for f in &files {
        let deps = g.entry(f.at.clone()).or_default();
        for p in &f.paths {
            if let Some(t) = target_file(&f.at, p, &known).filter(|t| *t != f.at) {
                deps.insert(t);
            }
        }
    }
    assert!(files.len() > 100 && g.values().map(BTreeSet::len).sum::<usize>() > 300, "the sources were read");
    let crossing: Vec<String> = tangles(&g)
        .into_iter()
        .filter(|scc| scc.iter().any(|m| folder[m] != folder[&scc[0]]))
        .map(|scc| {
            let edges = scc.iter().flat_map(|a| {
                g[a].iter()
                    .filter(|b| scc.contains(b) && folder[a] != folder[*b])
                    .map(move |b| format!("{} -> {}", a.join("::"), b.join("::")))
            });
            edges.collect::<Vec<_>>().join(", ")
        })
        .collect();
    assert!(
        crossing.is_empty(),
        "files of different folders import each other in cycles:\n{}",
        crossing.join("\n")
    );
}
