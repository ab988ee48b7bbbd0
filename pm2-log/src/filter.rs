//! The level filter: what `PM2_LOG` says, parsed once. Owns the grammar of the variable and the
//! choice of a level for a record's target; knows nothing of where lines go.
//!
//! Grammar: directives separated by commas. A bare level (`off`, `error`, `warn`, `info`,
//! `debug`, `trace`) is the default for every module; `module=level` sets it for a module and
//! the modules below it (`nmad` covers `nmad::core::gate`, not `nmadx`). The longest matching
//! module wins; a later directive replaces an earlier one for the same module.

use log::LevelFilter;

/// The level when `PM2_LOG` is unset or says nothing usable.
pub const DEFAULT: LevelFilter = LevelFilter::Warn;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    default: LevelFilter,
    /// (module path, level), in directive order.
    modules: Vec<(String, LevelFilter)>,
}

impl Default for Filter {
    fn default() -> Filter {
        Filter { default: DEFAULT, modules: Vec::new() }
    }
}

impl Filter {
    /// Parses `spec`; the directives it could not read are described in the second part (they
    /// are left out: the rest still applies).
    pub fn parse(spec: &str) -> (Filter, Vec<String>) {
        let mut f = Filter::default();
        let mut problems = Vec::new();
        for d in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            let (module, level) = match d.split_once('=') {
                Some((m, l)) => (Some(m.trim()), l.trim()),
                None => (None, d),
            };
            let Some(level) = level_named(level) else {
                let whole = if module.is_some() { format!("`{d}`: ") } else { String::new() };
                problems
                    .push(format!("{whole}`{level}` is not a level (off, error, warn, info, debug, trace)"));
                continue;
            };
            match module {
                None => f.default = level,
                Some("") => problems.push(format!("`{d}`: no module before `=`")),
                Some(m) => {
                    f.modules.retain(|(have, _)| have != m);
                    f.modules.push((m.to_string(), level));
                }
            }
        }
        (f, problems)
    }

    /// The level in force for records of `target` (a module path such as `nmad::core::gate`).
    pub fn level_for(&self, target: &str) -> LevelFilter {
        self.modules
            .iter()
            .filter(|(m, _)| covers(m, target))
            .max_by_key(|(m, _)| m.len())
            .map_or(self.default, |&(_, l)| l)
    }

    /// The most verbose level of any module (records above it are not even formatted).
    pub fn max(&self) -> LevelFilter {
        self.modules.iter().map(|&(_, l)| l).fold(self.default, Ord::max)
    }
}

fn level_named(s: &str) -> Option<LevelFilter> {
    [
        LevelFilter::Off,
        LevelFilter::Error,
        LevelFilter::Warn,
        LevelFilter::Info,
        LevelFilter::Debug,
        LevelFilter::Trace,
    ]
    .into_iter()
    .find(|l| l.as_str().eq_ignore_ascii_case(s))
}

/// Whether `module` is `target` or one of its parents.
fn covers(module: &str, target: &str) -> bool {
    target.strip_prefix(module).is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use LevelFilter::*;

    fn parsed(spec: &str) -> Filter {
        let (f, problems) = Filter::parse(spec);
        assert!(problems.is_empty(), "{spec}: {problems:?}");
        f
    }

    #[test]
    fn empty_means_warn() {
        for spec in ["", " ", ",,"] {
            let f = parsed(spec);
            assert_eq!(f.level_for("nmad::core"), Warn);
            assert_eq!(f.max(), Warn);
        }
    }

    #[test]
    fn a_bare_level_applies_everywhere_in_any_case() {
        assert_eq!(parsed("off").level_for("marcel"), Off);
        assert_eq!(parsed("DEBUG").level_for("tools::launcher"), Debug);
        assert_eq!(parsed("Trace").max(), Trace);
    }

    #[test]
    fn the_longest_module_wins_and_prefixes_stop_at_path_boundaries() {
        let f = parsed("nmad=debug,error,nmad::drivers::tcp=trace,nmad::core=off");
        assert_eq!(f.level_for("nmad"), Debug);
        assert_eq!(f.level_for("nmad::strategies"), Debug);
        assert_eq!(f.level_for("nmad::drivers::tcp::accept"), Trace);
        assert_eq!(f.level_for("nmad::core::gate"), Off);
        assert_eq!(f.level_for("nmadx"), Error);
        assert_eq!(f.level_for("madmpi::coll"), Error);
        assert_eq!(f.max(), Trace);
    }

    #[test]
    fn a_later_directive_replaces_an_earlier_one() {
        let f = parsed("nmad=trace,info,nmad=warn,error");
        assert_eq!(f.level_for("nmad::core"), Warn);
        assert_eq!(f.level_for("pioman"), Error);
        assert_eq!(f.max(), Warn);
    }

    #[test]
    fn bad_directives_are_reported_and_the_rest_applies() {
        let (f, problems) = Filter::parse("loud, nmad=debug, =info, pioman=verbose");
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("`loud` is not a level"), "{problems:?}");
        assert!(problems[1].contains("no module"), "{problems:?}");
        assert!(problems[2].starts_with("`pioman=verbose`: `verbose` is not a level"), "{problems:?}");
        assert_eq!(f.level_for("nmad::core"), Debug);
        assert_eq!(f.level_for("pioman"), Warn);
    }
}
