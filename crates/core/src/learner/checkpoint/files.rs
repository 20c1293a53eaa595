//! Checkpoint directories on disk: atomic writes with a checksummed manifest (`manifest.rs`),
//! quarantine of damaged ones, removal of what failed saves left, and listing by epoch.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::faults::{check, Stage};
use super::manifest::{
    files_under, io, relative_name, sync_dir, synced_entry, write_manifest, MANIFEST,
};
use crate::fsutil::temporary_sibling;
use crate::{Error, Result};

/// Writes a checkpoint directory `dest`: `fill` writes the files into a temporary directory,
/// which gets a manifest, is synced and renamed into place. An existing `dest` is replaced
/// only once the new one is complete. A failure leaves the temporary directory (and, between
/// the two renames of a replacement, the previous one moved aside) for the next start to
/// remove; neither has a name resume reads.
pub(crate) fn write_checkpoint_dir(
    dest: &Path,
    fill: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let parent = dest
        .parent()
        .ok_or_else(|| Error::checkpoint(dest.display().to_string(), "has no parent directory"))?;
    fs::create_dir_all(parent).map_err(io(parent))?;
    let tmp = temporary_sibling(dest);
    fs::create_dir_all(&tmp).map_err(io(&tmp))?;
    fill(&tmp)?;
    let mut manifest = BTreeMap::new();
    for path in files_under(&tmp)? {
        manifest.insert(relative_name(&tmp, &path), synced_entry(&path)?);
    }
    check(Stage::Manifest, dest)?;
    write_manifest(&tmp.join(MANIFEST), &manifest, dest)?;
    sync_dir(&tmp)?;
    check(Stage::Commit, dest)?;
    if dest.exists() {
        // Move the old one aside first: a directory cannot be renamed onto a non-empty one.
        let old = temporary_sibling(dest);
        fs::rename(dest, &old).map_err(io(dest))?;
        check(Stage::Swap, dest)?;
        fs::rename(&tmp, dest).map_err(io(dest))?;
        sync_dir(parent)?;
        check(Stage::Cleanup, dest)?;
        fs::remove_dir_all(&old).map_err(io(&old))?;
    } else {
        fs::rename(&tmp, dest).map_err(io(dest))?;
    }
    sync_dir(parent)
}

/// Whether `name` is one of [`temporary_sibling`]'s names: a save in progress, or the remains
/// of one that failed or was killed.
fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp-")
}

/// Removes what failed or killed saves left in `root` (temporary directories and files).
/// Call it only when no save is running: at the start of a run, which holds the job's lock.
///
/// # Errors
/// [`Error::Io`] when one cannot be removed.
pub(crate) fn remove_temporaries(root: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(root) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry.map_err(io(root))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !is_temporary(&name) {
            continue;
        }
        if path.is_dir() {
            fs::remove_dir_all(&path).map_err(io(&path))?;
        } else {
            fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}

/// Moves a damaged checkpoint directory out of resume's way, keeping it: `epoch-00000003`
/// becomes `epoch-00000003.damaged` (`.damaged-2`, ... when that is taken). Returns the new
/// path.
///
/// # Errors
/// [`Error::Io`] when the rename fails.
pub(crate) fn quarantine(dir: &Path) -> Result<PathBuf> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut target = dir.with_file_name(format!("{name}.damaged"));
    let mut n = 2;
    while target.exists() {
        target = dir.with_file_name(format!("{name}.damaged-{n}"));
        n += 1;
    }
    fs::rename(dir, &target).map_err(io(dir))?;
    Ok(target)
}

/// The name of the checkpoint directory of `epoch`.
pub(crate) fn epoch_dir_name(epoch: u64) -> String {
    format!("epoch-{epoch:08}")
}

/// The epoch of a checkpoint directory named `epoch-XXXXXXXX` (not of `epoch-….damaged`).
fn epoch_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("epoch-")?;
    if digits.len() != 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn dir_names(root: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, p)
        })
        .collect()
}

/// The checkpoint directories under `root` (`epoch-XXXXXXXX` and `interrupted`; never a
/// temporary or quarantined one), in reverse name order.
pub(crate) fn checkpoint_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = dir_names(root)
        .into_iter()
        .filter(|(name, _)| epoch_of(name).is_some() || name == "interrupted")
        .map(|(_, p)| p)
        .collect();
    dirs.sort();
    dirs.reverse();
    dirs
}

/// The epochs that have a checkpoint directory under `root`, verified or not, in increasing
/// order.
pub(crate) fn epoch_checkpoints(root: &Path) -> Vec<u64> {
    let mut epochs: Vec<u64> = dir_names(root)
        .iter()
        .filter_map(|(name, _)| epoch_of(name))
        .collect();
    epochs.sort_unstable();
    epochs
}

#[cfg(test)]
mod tests {
    use super::super::manifest::verify_checkpoint_dir;
    use super::*;
    use crate::config::tests_support::scratch_dir;

    #[test]
    fn a_written_directory_verifies_and_damage_is_named() {
        let root = scratch_dir();
        let dest = root.join("epoch-00000001");
        write_checkpoint_dir(&dest, |tmp| {
            fs::create_dir_all(tmp.join("model")).unwrap();
            fs::write(tmp.join("model/model.safetensors"), b"0123456789").unwrap();
            fs::write(tmp.join("state.json"), b"{}").unwrap();
            Ok(())
        })
        .unwrap();
        verify_checkpoint_dir(&dest).unwrap();
        fs::write(dest.join("model/model.safetensors"), b"01234").unwrap();
        let err = verify_checkpoint_dir(&dest).unwrap_err().to_string();
        assert!(
            err.contains("epoch-00000001")
                && err.contains("model/model.safetensors has 5 bytes, 10 were written"),
            "{err}"
        );
        fs::remove_file(dest.join(MANIFEST)).unwrap();
        assert!(verify_checkpoint_dir(&dest)
            .unwrap_err()
            .to_string()
            .contains("incomplete"));
    }

    #[test]
    fn rewriting_replaces_the_old_directory_whole() {
        let root = scratch_dir();
        let dest = root.join("last");
        for content in [&b"old"[..], b"new"] {
            write_checkpoint_dir(&dest, |tmp| {
                fs::write(tmp.join("x"), content).unwrap();
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(fs::read(dest.join("x")).unwrap(), b"new");
        // No temporary directory is left behind.
        assert_eq!(fs::read_dir(&root).unwrap().count(), 1);
    }
}
