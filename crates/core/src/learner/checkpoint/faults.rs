//! Failure injection into the stages of a checkpoint save, for tests: a test arms one stage of
//! one directory and the save fails there as if the disk were full or the process killed
//! (nothing is cleaned up after a failed save: the next start does it). Outside `cfg(test)`
//! [`check`] only visits the process-wide kill point of crash tests ([`super::kill_point`]).

/// The stages of saving a checkpoint directory, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Some of the files are in the temporary directory, not all.
    Files,
    /// Every file is written and synced; the manifest is not.
    Manifest,
    /// The temporary directory is complete; it is not renamed into place yet.
    Commit,
    /// The previous directory of that name is moved aside; the new one is not renamed in yet.
    Swap,
    /// The new directory is in place; the previous one, moved aside, is not deleted yet.
    Cleanup,
    /// The checkpoint and `last/` are published; some of the checkpoints retention gave up are
    /// deleted, not all.
    Prune,
    /// A done run reduces a checkpoint to its models: reached once the kept state is written,
    /// before the manifest is replaced, and again before the files it no longer lists are
    /// deleted.
    Drop,
}

/// Fails when a test armed `stage` for the directory `dir` (matched by its name).
///
/// # Errors
/// The injected failure, as an I/O error on `dir`.
#[cfg(not(test))]
#[inline(always)]
pub(crate) fn check(stage: Stage, dir: &std::path::Path) -> crate::Result<()> {
    super::kill_point::reached(stage, dir);
    Ok(())
}

#[cfg(test)]
pub(crate) use armed::{arm, check, disarm};

#[cfg(test)]
mod armed {
    use std::cell::RefCell;
    use std::path::Path;

    use super::Stage;
    use crate::{Error, Result};

    /// The armed failure of this thread: the stage, the directory name, and how many matching
    /// occurrences to let through first.
    type Armed = Option<(Stage, String, usize)>;

    thread_local! {
        // Per thread: tests run in parallel, each run on its own test's thread.
        static ARMED: RefCell<Armed> = const { RefCell::new(None) };
    }

    /// Makes the `skip + 1`-th save of directory `name` on this thread fail at `stage`.
    pub(crate) fn arm(stage: Stage, name: &str, skip: usize) {
        ARMED.with(|a| *a.borrow_mut() = Some((stage, name.to_string(), skip)));
    }

    /// Forgets the armed failure.
    pub(crate) fn disarm() {
        ARMED.with(|a| *a.borrow_mut() = None);
    }

    pub(crate) fn check(stage: Stage, dir: &Path) -> Result<()> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let fire = ARMED.with(|a| {
            let mut armed = a.borrow_mut();
            match armed.as_mut() {
                Some((s, n, skip)) if *s == stage && *n == name => {
                    if *skip == 0 {
                        *armed = None;
                        true
                    } else {
                        *skip -= 1;
                        false
                    }
                }
                _ => false,
            }
        });
        if fire {
            return Err(Error::io(
                dir,
                std::io::Error::other(format!("injected failure at stage {stage:?}")),
            ));
        }
        Ok(())
    }
}
