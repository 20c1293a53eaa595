//! Serde mirrors of the configuration JSON the TypeScript side emits. Every object carries its
//! type id under [`TYPE_KEY`]; unknown fields are errors.

mod data;
mod learner;
mod losses;
mod models;
mod optim;
mod parse;
mod tagged;

pub use data::*;
pub use learner::*;
pub use losses::*;
pub use models::*;
pub use optim::*;
pub use parse::parse_learner;

#[cfg(test)]
pub(crate) mod tests_support;

/// The key holding a configuration object's type identifier (e.g. `xpm_torch.learner.Learner`).
pub const TYPE_KEY: &str = "__xpmtype__";
