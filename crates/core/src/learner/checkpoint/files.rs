//! Checkpoint directories on disk: atomic writes with a checksummed manifest, verification,
//! quarantine of damaged ones, removal of what failed saves left, and listing by epoch.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::faults::{check, Stage};
use crate::fsutil::temporary_sibling;
use crate::logging::crc32c;
use crate::{Error, Result};

/// The file listing a checkpoint's files with their sizes and checksums; written last.
pub(crate) const MANIFEST: &str = "MANIFEST.json";

#[derive(Debug, Serialize, Deserialize)]
struct FileEntry {
    bytes: u64,
    crc32c: u32,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

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
        let bytes = fs::read(&path).map_err(io(&path))?;
        File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(io(&path))?;
        let name = relative_name(&tmp, &path);
        manifest.insert(
            name,
            FileEntry {
                bytes: bytes.len() as u64,
                crc32c: crc32c(&bytes),
            },
        );
    }
    check(Stage::Manifest, dest)?;
    let manifest_path = tmp.join(MANIFEST);
    let text = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| Error::checkpoint(dest.display().to_string(), e.to_string()))?;
    let mut file = File::create(&manifest_path).map_err(io(&manifest_path))?;
    file.write_all(&text)
        .and_then(|_| file.sync_all())
        .map_err(io(&manifest_path))?;
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

/// Checks a checkpoint directory against its manifest.
///
/// # Errors
/// [`Error::Checkpoint`] naming the directory and the first file that is missing, truncated
/// or altered.
pub(crate) fn verify_checkpoint_dir(dir: &Path) -> Result<()> {
    let what = || dir.display().to_string();
    let manifest_path = dir.join(MANIFEST);
    let text = fs::read(&manifest_path).map_err(|e| {
        Error::checkpoint(what(), format!("no readable {MANIFEST} ({e}): incomplete"))
    })?;
    let manifest: BTreeMap<String, FileEntry> = serde_json::from_slice(&text)
        .map_err(|e| Error::checkpoint(what(), format!("{MANIFEST} is corrupt: {e}")))?;
    for (name, entry) in manifest {
        let path = dir.join(&name);
        let bytes =
            fs::read(&path).map_err(|e| Error::checkpoint(what(), format!("{name}: {e}")))?;
        if bytes.len() as u64 != entry.bytes {
            return Err(Error::checkpoint(
                what(),
                format!(
                    "{name} has {} bytes, {} were written",
                    bytes.len(),
                    entry.bytes
                ),
            ));
        }
        if crc32c(&bytes) != entry.crc32c {
            return Err(Error::checkpoint(
                what(),
                format!("{name} does not match its checksum"),
            ));
        }
    }
    Ok(())
}

fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            out.extend(files_under(&path)?);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}

fn relative_name(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
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
