//! Records, datasets and samplers.

mod letor;
mod ltr;
mod pairwise;
mod prefetch;
mod synthetic;

pub use letor::*;
pub use ltr::*;
pub use pairwise::*;
pub use prefetch::*;
pub use synthetic::*;
