//! Checkpoints: everything a run needs to continue bit-identically, written so that a crash at
//! any moment leaves either the previous or the new checkpoint complete.

mod files;
mod state;

pub(crate) use files::*;
pub(crate) use state::*;
