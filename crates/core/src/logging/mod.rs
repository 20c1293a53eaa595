//! Run logs: TensorBoard event files.

mod crc32c;
mod proto;
mod tensorboard;

pub use tensorboard::*;
