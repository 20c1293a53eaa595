//! Gives the runner (and its examples) an rpath to the libtorch it was built against, as the
//! core's own test executables have; on another machine, LD_LIBRARY_PATH names that machine's
//! libtorch.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_XPM_TORCH_CORE_LIBTORCH_LIB");
    if let Some(lib) = std::env::var_os("DEP_XPM_TORCH_CORE_LIBTORCH_LIB") {
        for kind in ["bins", "examples"] {
            println!(
                "cargo:rustc-link-arg-{kind}=-Wl,-rpath,{}",
                lib.to_string_lossy()
            );
        }
    }
}
