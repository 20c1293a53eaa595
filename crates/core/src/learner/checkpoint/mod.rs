//! Checkpoints: everything a run needs to continue bit-identically, written so that a crash at
//! any moment leaves either the previous or the new checkpoint complete.

mod faults;
mod files;
// Test builds inject failures per thread instead (faults::arm).
#[cfg_attr(test, allow(dead_code))]
mod kill_point;
mod policy;
mod publish;
mod state;

#[cfg(test)]
pub(crate) use faults::{arm, disarm, Stage};
pub(crate) use files::*;
pub(crate) use policy::*;
pub(crate) use publish::*;
pub(crate) use state::*;
