//! Data-parallel training on libtorch's own distributed engine (c10d): the launch environment
//! ([`DistEnv`]), the rendezvous on a TCPStore, the Gloo process group and its collectives
//! ([`ProcessGroup`]), and DDP's gradient synchronisation. The C++ side is `cpp/dist.cpp`.
//!
//! Gradients are synchronised after backward (bucketed all-reduce in the shim), not inside it
//! by libtorch's `c10d::Reducer`, although the Reducer does work from C++ on 2.11. The Reducer
//! must be armed before the last backward and then communicates from autograd hooks. If one
//! rank runs out of memory during that backward, the other ranks are left waiting inside
//! their own backward for buckets that never come. Synchronising afterwards lets all ranks
//! first agree through [`ProcessGroup::any_flag`] whether the step succeeded everywhere. The
//! cost is that communication no longer overlaps the backward.

mod env;
mod ffi;
mod group;
mod hostlist;
mod peers;

pub use crate::error::DistributedError;
pub use env::*;
pub use group::*;
