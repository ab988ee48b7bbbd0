//! Where the wrapper finds `mpi.h` and `libmpi.so`, from where its own executable is:
//! - an installed tree (`./run install PREFIX`): `PREFIX/bin/mpicc`, `PREFIX/include/mpi.h`,
//!   `PREFIX/lib/libmpi.so`;
//! - the cargo build tree: `target/<profile>/mpicc`, the workspace's `madmpi/include/mpi.h`,
//!   and `libmpi.so` beside the wrapper, where cargo puts it.
//!
//! A missing file is an error that says how to build or install it.

use std::path::{Path, PathBuf};

/// The header's name, in [`Layout::include`].
pub const HEADER: &str = "mpi.h";
/// The library's name, in [`Layout::lib`].
pub const LIBRARY: &str = "libmpi.so";
/// The library's soname (MPICH's ABI), which linked programs ask for at run time.
pub const SONAME: &str = "libmpi.so.12";

/// Which kind of tree the wrapper runs from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `PREFIX/bin/`: an installation.
    Installed { prefix: PathBuf },
    /// `target/<profile>/`: cargo's output directory.
    BuildTree,
}

/// The directories of the header and the library (not checked yet: see [`Layout::header`] and
/// [`Layout::library`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub kind: Kind,
    pub include: PathBuf,
    pub lib: PathBuf,
}

impl Layout {
    /// The layout around the wrapper executable `exe` (symbolic links resolved).
    pub fn of_executable(exe: &Path) -> Layout {
        let dir = exe.parent().unwrap_or(Path::new("/")).to_path_buf();
        match dir.parent() {
            Some(prefix) if dir.file_name().is_some_and(|n| n == "bin") => Layout {
                include: prefix.join("include"),
                lib: prefix.join("lib"),
                kind: Kind::Installed { prefix: prefix.to_path_buf() },
            },
            _ => Layout { kind: Kind::BuildTree, include: workspace_include(), lib: dir },
        }
    }

    /// The include directory, once `mpi.h` is known to be there.
    pub fn header(&self) -> Result<&Path, String> {
        let file = self.include.join(HEADER);
        if file.is_file() {
            return Ok(&self.include);
        }
        Err(match &self.kind {
            Kind::Installed { prefix } => incomplete(&file, prefix),
            Kind::BuildTree => format!(
                "{} not found: this wrapper was built from sources that are no longer there \
                 (build it again, or install with `./run install PREFIX` from the pm2-rs sources)",
                file.display()
            ),
        })
    }

    /// The library directory, once `libmpi.so` is known to be there.
    pub fn library(&self) -> Result<&Path, String> {
        let file = self.lib.join(LIBRARY);
        if file.is_file() {
            return Ok(&self.lib);
        }
        Err(match &self.kind {
            Kind::Installed { prefix } => incomplete(&file, prefix),
            Kind::BuildTree => format!(
                "{} not found: build the library first, from the pm2-rs sources: \
                 `cargo build{} -p madmpi-libmpi`",
                file.display(),
                profile_flag(&self.lib)
            ),
        })
    }
}

impl Layout {
    /// In the build tree, makes the soname link `libmpi.so.12 -> libmpi.so` beside the library
    /// (cargo makes only `libmpi.so`), so that the programs linked there run (an installation
    /// has it already).
    pub fn link_soname(&self) -> Result<(), String> {
        if self.kind != Kind::BuildTree {
            return Ok(());
        }
        let link = self.lib.join(SONAME);
        if std::fs::read_link(&link).is_ok_and(|t| t == Path::new(LIBRARY)) {
            return Ok(());
        }
        let _ = std::fs::remove_file(&link);
        match std::os::unix::fs::symlink(LIBRARY, &link) {
            // Another wrapper may have made it at the same time.
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                Err(format!("cannot make the link {} -> {LIBRARY}: {e}", link.display()))
            }
            _ => Ok(()),
        }
    }
}

/// madmpi's `include/` in the sources this crate was built from.
fn workspace_include() -> PathBuf {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR"));
    tools.parent().unwrap_or(tools).join("madmpi/include")
}

fn incomplete(file: &Path, prefix: &Path) -> String {
    format!(
        "{} not found: the installation in {} is incomplete (install again with \
         `./run install {}` from the pm2-rs sources)",
        file.display(),
        prefix.display(),
        prefix.display()
    )
}

/// The cargo option that builds into `target/<profile>` (`dir`).
fn profile_flag(dir: &Path) -> String {
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => String::new(),
        Some("release") => " --release".to_string(),
        Some(other) => format!(" --profile {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ccwrap-layout-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn an_installed_tree_is_found_from_bin_and_checked() {
        let prefix = scratch("installed");
        let l = Layout::of_executable(&prefix.join("bin/mpicc"));
        assert_eq!(l.kind, Kind::Installed { prefix: prefix.clone() });
        assert_eq!((l.include.clone(), l.lib.clone()), (prefix.join("include"), prefix.join("lib")));
        let e = l.header().unwrap_err();
        assert!(e.contains("include/mpi.h not found") && e.contains("./run install"), "{e}");
        assert!(l.library().unwrap_err().contains("lib/libmpi.so not found"));
        for (dir, file) in [("include", HEADER), ("lib", LIBRARY)] {
            std::fs::create_dir_all(prefix.join(dir)).unwrap();
            std::fs::write(prefix.join(dir).join(file), "").unwrap();
        }
        assert_eq!(l.header().unwrap(), prefix.join("include"));
        assert_eq!(l.library().unwrap(), prefix.join("lib"));
        std::fs::remove_dir_all(&prefix).unwrap();
    }

    #[test]
    fn the_build_tree_uses_the_workspace_header_and_the_profile_directory() {
        let target = scratch("target");
        let l = Layout::of_executable(&target.join("release/mpicc"));
        assert_eq!(l.kind, Kind::BuildTree);
        assert_eq!(l.lib, target.join("release"));
        assert!(l.header().unwrap().join("mpi.h").is_file(), "{l:?}");
        let e = l.library().unwrap_err();
        assert!(
            e.contains("release/libmpi.so not found") && e.contains("cargo build --release -p madmpi-libmpi")
        );
        std::fs::create_dir_all(target.join("release")).unwrap();
        std::fs::write(target.join("release").join(LIBRARY), "").unwrap();
        assert_eq!(l.library().unwrap(), target.join("release"));
        l.link_soname().unwrap();
        l.link_soname().unwrap();
        assert_eq!(std::fs::read_link(target.join("release").join(SONAME)).unwrap(), Path::new(LIBRARY));
        let debug = Layout::of_executable(&target.join("debug/mpicc")).library().unwrap_err();
        assert!(debug.contains("`cargo build -p madmpi-libmpi`"), "{debug}");
        let other = Layout::of_executable(&target.join("fast/mpicc")).library().unwrap_err();
        assert!(other.contains("cargo build --profile fast -p"), "{other}");
        std::fs::remove_dir_all(&target).unwrap();
    }
}
