//! Data, in the order it flows: file formats read into records ([`formats`]), samplers that
//! draw batches from them ([`samplers`]), the staging that prefetches batches and moves them to
//! the model ([`staging`]), and data held on the JavaScript side ([`javascript`]).

mod formats;
mod javascript;
mod samplers;
mod staging;

pub use formats::*;
pub use javascript::*;
pub use samplers::*;
pub use staging::*;

/// The MS MARCO fixture's files and configurations, for the tests of the layers above.
#[cfg(test)]
pub(crate) use formats::msmarco::tests as msmarco_fixture;
