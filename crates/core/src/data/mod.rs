//! Records, datasets and samplers.

mod letor;
mod ltr;
mod pairwise;
mod synthetic;

pub use letor::*;
pub use ltr::*;
pub use pairwise::*;
pub use synthetic::*;
