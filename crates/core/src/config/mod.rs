//! Serde mirrors of the configuration JSON the TypeScript side emits (`ts/config/wire.ts`).
//! TypeScript is the source of truth for names and defaults: every value arrives explicitly,
//! every object opens with its type id under [`TYPE_KEY`], and unknown fields are errors.

mod any;
mod batchers;
mod data;
mod fabric;
mod hooks;
mod js;
mod learner;
mod listwise;
mod losses;
mod models;
mod module;
mod optim;
mod parse;
mod rules;
pub(crate) mod tagged;
mod text;
mod trainers;
mod validation;

pub use any::*;
pub use batchers::*;
pub use data::*;
pub use fabric::*;
pub use hooks::*;
pub use js::*;
pub use learner::*;
pub use listwise::*;
pub use losses::*;
pub use models::*;
pub use module::*;
pub use optim::*;
pub use parse::{parse_any, parse_learner, parse_model};
pub use tagged::{ConfigType, Typed};
pub use text::*;
pub use trainers::*;
pub use validation::*;

/// The configuration types generated from `schema.json` at build time (build/config_types.rs).
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/config_types.rs"));
}

#[cfg(test)]
pub(crate) mod tests_support;

/// The key holding a configuration object's type identifier (e.g. `xpm_torch.learner.Learner`).
pub const TYPE_KEY: &str = "__xpmtype__";
