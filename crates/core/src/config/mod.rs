//! The configuration the TypeScript side emits (`ts/config/wire.ts`), read into types generated
//! at build time from `schema.json` (the JSON Schema of the TypeScript classes, written by
//! `npm run build`; see `build/config_types.rs`). TypeScript is the source of truth for names and
//! defaults: every value arrives explicitly, every object opens with its type id under
//! [`TYPE_KEY`], and unknown fields are errors.

mod access;
mod checks;
mod js;
mod parse;
mod rules;
pub(crate) mod tagged;

/// The types the build generates from `schema.json`; `generated.rs` beside this file is a copy
/// to read (a test fails when it is stale).
mod generated {
    include!(concat!(env!("OUT_DIR"), "/config_types.rs"));
}

pub use generated::*;
pub use js::*;
pub use parse::{parse_any, parse_learner, parse_model};
pub use tagged::{ConfigType, Typed};

#[cfg(test)]
mod generated_tests;
#[cfg(test)]
pub(crate) mod tests_support;

/// The key holding a configuration object's type identifier (e.g. `xpm_torch.learner.Learner`).
pub const TYPE_KEY: &str = "__xpmtype__";
