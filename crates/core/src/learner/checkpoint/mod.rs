//! Checkpoints: everything a run needs to continue bit-identically, written so that a crash at
//! any moment leaves either the previous or the new checkpoint complete; once the run is done,
//! only their models and what its result is read from (`done.rs`).

mod done;
mod faults;
mod files;
// Test builds inject failures per thread instead (faults::arm).
#[cfg_attr(test, allow(dead_code))]
mod kill_point;
mod manifest;
mod policy;
mod publish;
mod state;

pub(crate) use done::*;
#[cfg(test)]
pub(crate) use faults::{arm, disarm, Stage};
pub(crate) use files::*;
pub(crate) use manifest::{
    listed_files, read_listed, relist_checkpoint_dir, remove_unlisted, verify_checkpoint_dir,
    write_synced,
};
pub(crate) use policy::*;
pub(crate) use publish::*;
pub(crate) use state::*;
