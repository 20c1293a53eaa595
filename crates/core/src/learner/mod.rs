//! The learner: builds everything from the configuration and runs the epoch/step loop.

mod build;
mod evaluate;
mod observer;
mod run;

pub use evaluate::*;
pub use observer::*;
pub use run::*;
