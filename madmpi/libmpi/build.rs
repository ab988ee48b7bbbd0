//! Gives `libmpi.so` the soname of MPICH's ABI (`libmpi.so.12`), so that programs linked against
//! it ask for `libmpi.so.12` at run time, as they would with MPICH's `libmpi.so`.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi.so.12");
    println!("cargo:rerun-if-changed=build.rs");
}
