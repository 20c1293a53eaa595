//! Run logs: TensorBoard event files.

mod crc32c;
mod proto;
mod tensorboard;

pub(crate) use crc32c::crc32c;
pub use tensorboard::*;
