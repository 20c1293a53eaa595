//! Models the learner can train.

mod attention;
mod base;
mod build;
mod drmm;
mod dual_encoder;
pub mod hf;
mod linear;
mod mlp;
mod mlp_scorer;
mod multiple;
mod params;
mod placed;
mod safetensors_file;
mod sigmoid;
mod torchscript;
mod trained;
mod transformer;
mod weights;

pub use base::*;
pub use build::*;
pub use drmm::*;
pub use dual_encoder::*;
pub use linear::*;
pub use mlp::*;
pub use mlp_scorer::*;
pub use multiple::*;
pub use placed::*;
pub use sigmoid::*;
pub use torchscript::*;
pub use trained::*;
pub use transformer::*;
pub use weights::*;

#[cfg(test)]
pub(crate) mod tests;
