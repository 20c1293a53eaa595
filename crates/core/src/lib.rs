//! The training engine of xpm-torch: configuration types generated from the classes' schema,
//! data, models, losses, optimizers and the learner loop, over libtorch through `tch`. It knows
//! nothing of Node; the binding crate hands it a JSON configuration and an
//! [`learner::Observer`].
#![warn(missing_docs)]

pub mod batching;
pub mod config;
pub mod data;
pub mod distributed;
mod error;
mod ffi;
mod fsutil;
pub mod learner;
pub mod logging;
pub mod losses;
pub mod models;
pub mod optim;
pub mod rng;
pub mod runtime;
pub mod text;

pub use error::{Error, Result};
