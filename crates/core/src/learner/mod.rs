//! The learner: builds everything from the configuration and runs the epoch/step loop.

pub(crate) mod build;
mod checkpoint;
mod context;
mod distributed;
#[cfg(test)]
mod done_tests;
mod hooks;
#[cfg(test)]
mod init_tests;
pub(crate) mod listeners;
mod metrics;
mod observer;
mod output;
#[cfg(test)]
mod recovery_tests;
mod reproducibility;
mod run;
mod step_losses;
mod trainers;

pub use context::*;
pub use listeners::{ListenerStatus, ListenerView, RankMetric};
pub use metrics::*;
pub use observer::*;
pub use output::*;
pub use run::*;
