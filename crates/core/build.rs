//! Checks that the libtorch torch-sys found is the 2.11 release we are pinned to, and gives this
//! crate's own test and bench executables an rpath to it (the rlib itself links nothing; the
//! shipped Node addon lives in another crate and never carries a build-machine path).

use std::path::PathBuf;

const EXPECTED_TORCH: &str = "2.11.";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let Some(lib) = std::env::var_os("DEP_TCH_LIBTORCH_LIB").map(PathBuf::from) else {
        return;
    };
    let version_file = lib.join("..").join("version.py");
    if let Ok(text) = std::fs::read_to_string(&version_file) {
        let version = text
            .lines()
            .find_map(|l| l.strip_prefix("__version__ = "))
            .map(|v| v.trim().trim_matches('\'').to_string())
            .unwrap_or_default();
        if !version.starts_with(EXPECTED_TORCH) {
            panic!(
                "libtorch at {} is torch {version:?}, but xpm-torch needs torch 2.11.x; \
                 run `npm run setup` (or point LIBTORCH at a torch 2.11 install)",
                lib.display()
            );
        }
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
}
