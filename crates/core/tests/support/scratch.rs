//! A fresh directory for each test's files. Shared by the library's unit tests
//! (`src/config/tests_support.rs`) and the integration tests: it uses nothing of the crate.
// Each includer uses part of this module; test support stops at the first failure.
#![allow(dead_code, clippy::unwrap_used)]

/// A fresh, empty directory under the system's temporary one, unique in this process.
pub fn scratch_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "xpm-core-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
