//! Batches on their way to the model: the records of a batch, their staging (pinned, moved to
//! the device), the producer thread that prefetches them, and the model inputs (features,
//! token tables, encoded texts).

mod batch;
mod prefetch;
pub(crate) mod score_input;
mod text_encoding;

pub use batch::*;
pub use prefetch::*;
pub use score_input::*;
pub use text_encoding::*;
