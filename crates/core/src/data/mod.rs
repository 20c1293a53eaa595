//! Records, datasets and samplers.

mod ltr;
mod pairwise;
mod synthetic;

pub use ltr::*;
pub use pairwise::*;
pub use synthetic::*;
