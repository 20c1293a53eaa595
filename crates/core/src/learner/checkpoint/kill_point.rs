//! A process-wide kill point in the stages of a checkpoint save, for crash tests of whole
//! processes (the release build that Node loads): with `XPM_TORCH_KILL_DURING_SAVE=<stage>[:<n>]`
//! the process sends itself SIGKILL the `n`-th time (default 1) a save reaches `<stage>`
//! (`files`, `manifest`, `commit`, `swap`, `cleanup`, `prune`, `drop`), after saying so on stderr. The
//! variable is read once; without it a save pays one atomic load per stage.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::faults::Stage;

/// The variable that arms the kill point.
pub(crate) const KILL_VAR: &str = "XPM_TORCH_KILL_DURING_SAVE";

fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Files => "files",
        Stage::Manifest => "manifest",
        Stage::Commit => "commit",
        Stage::Swap => "swap",
        Stage::Cleanup => "cleanup",
        Stage::Prune => "prune",
        Stage::Drop => "drop",
    }
}

/// The armed stage and occurrence, parsed from `text`; None when it names no stage.
fn parse(text: &str) -> Option<(&'static str, usize)> {
    let (name, nth) = match text.split_once(':') {
        Some((name, nth)) => (name, nth.trim().parse().ok().filter(|n| *n >= 1)?),
        None => (text, 1),
    };
    let name = name.trim();
    [
        Stage::Files,
        Stage::Manifest,
        Stage::Commit,
        Stage::Swap,
        Stage::Cleanup,
        Stage::Prune,
        Stage::Drop,
    ]
    .into_iter()
    .map(stage_name)
    .find(|s| *s == name)
    .map(|s| (s, nth))
}

fn armed() -> Option<(&'static str, usize)> {
    static ARMED: OnceLock<Option<(&'static str, usize)>> = OnceLock::new();
    *ARMED.get_or_init(|| {
        let text = std::env::var(KILL_VAR).ok()?;
        let parsed = parse(&text);
        if parsed.is_none() {
            eprintln!("xpm-torch: ignoring {KILL_VAR}={text:?}: expected <stage>[:<n>], stage one of files, manifest, commit, swap, cleanup, prune, drop");
        }
        parsed
    })
}

/// Kills the process here when armed for this occurrence of `stage`.
pub(crate) fn reached(stage: Stage, dir: &Path) {
    static SEEN: AtomicUsize = AtomicUsize::new(0);
    let Some((name, nth)) = armed() else { return };
    if name != stage_name(stage) || SEEN.fetch_add(1, Ordering::SeqCst) + 1 != nth {
        return;
    }
    eprintln!(
        "xpm-torch: killed during a checkpoint save, at stage {name} of {}",
        dir.display()
    );
    // SAFETY: raise has no preconditions; SIGKILL ends the process here, as a crash would.
    unsafe {
        libc::raise(libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_names_a_stage_and_an_occurrence() {
        assert_eq!(parse("files"), Some(("files", 1)));
        assert_eq!(parse("swap:3"), Some(("swap", 3)));
        assert_eq!(parse("drop:2"), Some(("drop", 2)));
        assert_eq!(parse("swap:0"), None);
        assert_eq!(parse("disk"), None);
        assert_eq!(parse("commit:x"), None);
    }
}
