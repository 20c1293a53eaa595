//! A run cancelled at a chosen step, as a user's Ctrl-C would: shared by the integration tests
//! and the examples that interrupt and resume runs.

use std::sync::atomic::{AtomicBool, Ordering};

use xpm_torch_core::config::LearnerConfig;
use xpm_torch_core::learner::{learn, LearnOutput, Observer, StepProgress};

/// Raises `flag` once step `step` is done.
struct CancelAt<'a> {
    step: u64,
    flag: &'a AtomicBool,
}

impl Observer for CancelAt<'_> {
    fn on_step(&mut self, progress: StepProgress) -> xpm_torch_core::Result<()> {
        if progress.step >= self.step {
            self.flag.store(true, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// `config`'s run, cancelled once step `step` is done (an interruption error, with the
/// checkpoint it wrote, unless the run ends first).
pub fn learn_cancelled_at(
    config: &LearnerConfig,
    step: u64,
) -> xpm_torch_core::Result<LearnOutput> {
    let flag = AtomicBool::new(false);
    learn(config, &mut CancelAt { step, flag: &flag }, &flag)
}
