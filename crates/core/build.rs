//! Checks that the libtorch torch-sys found is the 2.11 release we are pinned to, compiles the
//! small C++ shim for what tch does not expose, and gives this crate's own test and bench
//! executables an rpath to libtorch (the rlib itself links nothing; the shipped Node addon
//! lives in another crate and never carries a build-machine path). It also generates the
//! configuration types from the schema of the TypeScript classes (build/config_types.rs).

use std::path::PathBuf;

#[path = "build/config_types.rs"]
mod config_types;

const EXPECTED_TORCH: &str = "2.11.";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/config_types.rs");
    println!("cargo:rerun-if-changed=src/config/schema.json");
    let schema = match std::fs::read_to_string("src/config/schema.json") {
        Ok(schema) => schema,
        Err(e) => panic!("src/config/schema.json (written by `npm run build`): {e}"),
    };
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        panic!("cargo sets OUT_DIR for build scripts");
    };
    if let Err(e) = std::fs::write(out.join("config_types.rs"), config_types::generate(&schema)) {
        panic!("writing the generated configuration types: {e}");
    }
    println!("cargo:rerun-if-changed=cpp/ffi.h");
    println!("cargo:rerun-if-changed=cpp/shim.cpp");
    println!("cargo:rerun-if-changed=cpp/autocast.cpp");
    println!("cargo:rerun-if-changed=cpp/generators.cpp");
    println!("cargo:rerun-if-changed=cpp/cpu_cache.cpp");
    let Some(lib) = std::env::var_os("DEP_TCH_LIBTORCH_LIB").map(PathBuf::from) else {
        panic!(
            "torch-sys did not say where libtorch is (DEP_TCH_LIBTORCH_LIB); run `npm run setup`"
        );
    };
    let root = lib
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| lib.clone());
    let version_file = root.join("version.py");
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
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .file("cpp/shim.cpp")
        .file("cpp/autocast.cpp")
        .file("cpp/generators.cpp")
        .file("cpp/cpu_cache.cpp")
        .include(root.join("include"))
        .include(root.join("include/torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag_if_supported("-Wno-unused-parameter")
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .compile("xpmshim");
    // c10d (rendezvous, Gloo, collectives): its own unit, the only one seeing the gloo stand-ins.
    println!("cargo:rerun-if-changed=cpp/dist.cpp");
    println!("cargo:rerun-if-changed=cpp/gloo-stub");
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .file("cpp/dist.cpp")
        .include("cpp/gloo-stub")
        .include(root.join("include"))
        .include(root.join("include/torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag_if_supported("-Wno-unused-parameter")
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .compile("xpmdist");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    // DEP_XPM_TORCH_CORE_LIBTORCH_LIB for dependents' build scripts.
    println!("cargo:libtorch_lib={}", lib.display());
}
