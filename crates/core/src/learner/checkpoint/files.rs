use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
/// only once the new one is complete.
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
    let manifest_path = tmp.join(MANIFEST);
    let text = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| Error::checkpoint(dest.display().to_string(), e.to_string()))?;
    let mut file = File::create(&manifest_path).map_err(io(&manifest_path))?;
    file.write_all(&text)
        .and_then(|_| file.sync_all())
        .map_err(io(&manifest_path))?;
    sync_dir(&tmp)?;
    if dest.exists() {
        // Move the old one aside first: a directory cannot be renamed onto a non-empty one.
        let old = temporary_sibling(dest);
        fs::rename(dest, &old).map_err(io(dest))?;
        fs::rename(&tmp, dest).map_err(io(dest))?;
        fs::remove_dir_all(&old).map_err(io(&old))?;
    } else {
        fs::rename(&tmp, dest).map_err(io(dest))?;
    }
    sync_dir(parent)
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

/// The checkpoint directories under `root` (`epoch-*` and `interrupted`), newest first by the
/// global step recorded in their names or states.
pub(crate) fn checkpoint_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            p.is_dir() && (name.starts_with("epoch-") || name == "interrupted")
        })
        .collect();
    dirs.sort();
    dirs.reverse();
    dirs
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
