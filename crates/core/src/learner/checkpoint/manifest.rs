//! A checkpoint directory's manifest, `MANIFEST.json`: every other file's size and CRC-32C,
//! written last. Verification against it, reading one file checked against it, and its atomic
//! replacement by a shorter one with the deletion of what it no longer lists (what a done run
//! keeps of its checkpoints, `done.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::temporary_sibling;
use crate::logging::crc32c;
use crate::{Error, Result};

/// The file listing a checkpoint's files with their sizes and checksums; written last.
pub(crate) const MANIFEST: &str = "MANIFEST.json";

/// A file's entry in a manifest.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct FileEntry {
    bytes: u64,
    crc32c: u32,
}

pub(super) fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// The manifest entry of the file at `path`, once synced to disk.
pub(super) fn synced_entry(path: &Path) -> Result<FileEntry> {
    let bytes = fs::read(path).map_err(io(path))?;
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io(path))?;
    Ok(FileEntry {
        bytes: bytes.len() as u64,
        crc32c: crc32c(&bytes),
    })
}

/// Writes `bytes` to `path` and syncs it.
///
/// # Errors
/// [`Error::Io`] when the write or the sync fails.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = File::create(path).map_err(io(path))?;
    file.write_all(bytes)
        .and_then(|_| file.sync_all())
        .map_err(io(path))
}

/// Writes `manifest` to `path`, the manifest of checkpoint `dir`.
pub(super) fn write_manifest(
    path: &Path,
    manifest: &BTreeMap<String, FileEntry>,
    dir: &Path,
) -> Result<()> {
    let text = serde_json::to_vec_pretty(manifest)
        .map_err(|e| Error::checkpoint(dir.display().to_string(), e.to_string()))?;
    write_synced(path, &text)
}

/// The manifest of checkpoint directory `dir`.
fn read_manifest(dir: &Path) -> Result<BTreeMap<String, FileEntry>> {
    let what = || dir.display().to_string();
    let manifest_path = dir.join(MANIFEST);
    let text = fs::read(&manifest_path).map_err(|e| {
        Error::checkpoint(what(), format!("no readable {MANIFEST} ({e}): incomplete"))
    })?;
    serde_json::from_slice(&text)
        .map_err(|e| Error::checkpoint(what(), format!("{MANIFEST} is corrupt: {e}")))
}

/// The bytes of file `name` of checkpoint `dir`, checked against its manifest `entry`.
fn read_checked(dir: &Path, name: &str, entry: &FileEntry) -> Result<Vec<u8>> {
    let what = || dir.display().to_string();
    let bytes =
        fs::read(dir.join(name)).map_err(|e| Error::checkpoint(what(), format!("{name}: {e}")))?;
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
    Ok(bytes)
}

/// Checks a checkpoint directory against its manifest; returns the names the manifest lists.
///
/// # Errors
/// [`Error::Checkpoint`] naming the directory and the first file that is missing, truncated
/// or altered.
pub(crate) fn verify_checkpoint_dir(dir: &Path) -> Result<BTreeSet<String>> {
    let manifest = read_manifest(dir)?;
    for (name, entry) in &manifest {
        read_checked(dir, name, entry)?;
    }
    Ok(manifest.into_keys().collect())
}

/// The names the manifest of checkpoint `dir` lists.
///
/// # Errors
/// [`Error::Checkpoint`] when the manifest is missing or corrupt.
pub(crate) fn listed_files(dir: &Path) -> Result<BTreeSet<String>> {
    Ok(read_manifest(dir)?.into_keys().collect())
}

/// The bytes of file `name` of checkpoint `dir`, checked against its manifest alone (the other
/// files are not read).
///
/// # Errors
/// [`Error::Checkpoint`] when the manifest does not list it, or it is missing, truncated or
/// altered.
pub(crate) fn read_listed(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let manifest = read_manifest(dir)?;
    let entry = manifest.get(name).ok_or_else(|| {
        Error::checkpoint(
            dir.display().to_string(),
            format!("{MANIFEST} lists no {name}"),
        )
    })?;
    read_checked(dir, name, entry)
}

/// Replaces the manifest of checkpoint `dir` by one listing only `kept` (with the entries they
/// had) and `added` (files the caller wrote and synced): written beside it, synced, then renamed
/// over it, so that a crash leaves one manifest or the other. The files it no longer lists stay
/// until [`remove_unlisted`].
///
/// # Errors
/// [`Error::Checkpoint`] when the manifest is unreadable or lists no `kept` file;
/// [`Error::Io`] when a write, sync or rename fails.
pub(crate) fn relist_checkpoint_dir(dir: &Path, kept: &[&str], added: &[&str]) -> Result<()> {
    let mut manifest = read_manifest(dir)?;
    let mut relisted = BTreeMap::new();
    for name in kept {
        let entry = manifest.remove(*name).ok_or_else(|| {
            Error::checkpoint(
                dir.display().to_string(),
                format!("{MANIFEST} lists no {name}"),
            )
        })?;
        relisted.insert(name.to_string(), entry);
    }
    for name in added {
        relisted.insert(name.to_string(), synced_entry(&dir.join(name))?);
    }
    let path = dir.join(MANIFEST);
    let tmp = temporary_sibling(&path);
    write_manifest(&tmp, &relisted, dir)?;
    fs::rename(&tmp, &path).map_err(io(&path))?;
    sync_dir(dir)
}

/// Deletes the files of checkpoint `dir` that its manifest does not list; returns their bytes.
///
/// # Errors
/// [`Error::Checkpoint`] when the manifest is unreadable; [`Error::Io`] when a deletion fails.
pub(crate) fn remove_unlisted(dir: &Path) -> Result<u64> {
    let listed = listed_files(dir)?;
    let mut bytes = 0;
    for path in files_under(dir)? {
        let name = relative_name(dir, &path);
        if name == MANIFEST || listed.contains(&name) {
            continue;
        }
        bytes += fs::metadata(&path).map_err(io(&path))?.len();
        fs::remove_file(&path).map_err(io(&path))?;
    }
    sync_dir(dir)?;
    Ok(bytes)
}

/// Every file under `dir`, in its subdirectories too.
pub(super) fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
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

/// The name of `path` relative to `root`, with `/` separators (as a manifest lists it).
pub(super) fn relative_name(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests_support::scratch_dir;
    use crate::learner::checkpoint::write_checkpoint_dir;

    #[test]
    fn a_shorter_manifest_replaces_the_old_one_and_the_files_it_drops_go_after() {
        let dest = scratch_dir().join("epoch-00000001");
        write_checkpoint_dir(&dest, |tmp| {
            fs::create_dir_all(tmp.join("model")).unwrap();
            fs::write(tmp.join("model/model.safetensors"), b"weights").unwrap();
            fs::write(tmp.join("optimizer.safetensors"), b"moments!").unwrap();
            Ok(())
        })
        .unwrap();
        write_synced(&dest.join("kept.json"), b"{}").unwrap();
        // Not listed yet: not read, not checked.
        assert_eq!(
            verify_checkpoint_dir(&dest).unwrap(),
            ["model/model.safetensors", "optimizer.safetensors"]
                .map(String::from)
                .into()
        );
        relist_checkpoint_dir(&dest, &["model/model.safetensors"], &["kept.json"]).unwrap();
        let listed: BTreeSet<String> = ["kept.json", "model/model.safetensors"]
            .map(String::from)
            .into();
        assert_eq!(verify_checkpoint_dir(&dest).unwrap(), listed);
        assert_eq!(read_listed(&dest, "kept.json").unwrap(), b"{}");
        // The dropped file stays until removed; then only the listed ones and the manifest.
        assert!(dest.join("optimizer.safetensors").exists());
        assert_eq!(remove_unlisted(&dest).unwrap(), 8);
        assert_eq!(remove_unlisted(&dest).unwrap(), 0);
        let mut left: Vec<String> = files_under(&dest)
            .unwrap()
            .iter()
            .map(|p| relative_name(&dest, p))
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["MANIFEST.json", "kept.json", "model/model.safetensors"]
        );
        let err = relist_checkpoint_dir(&dest, &["optimizer.safetensors"], &[]).unwrap_err();
        assert!(
            err.to_string().contains("lists no optimizer.safetensors"),
            "{err}"
        );
        let err = read_listed(&dest, "optimizer.safetensors").unwrap_err();
        assert!(
            err.to_string().contains("lists no optimizer.safetensors"),
            "{err}"
        );
    }
}
