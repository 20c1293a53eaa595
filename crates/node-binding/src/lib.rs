//! The Node binding of xpm-torch: JSON in, a Promise and events out. No training logic lives
//! here; see `xpm-torch-core`.
#![deny(clippy::all)]

mod bridge;
mod contract;
mod learn;
mod model;
mod outcome;
mod rendezvous;
mod runtime_info;
mod self_test;
mod thread;
