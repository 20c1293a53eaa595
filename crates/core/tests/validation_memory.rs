//! Validation starts from an empty CPU tensor cache: the blocks the training steps keep for
//! reuse go back to the system first, so that scoring the held-out data (other shapes, no
//! backward) does not raise the run's peak memory above training's. Alone in a binary of its
//! own: the cache is the whole process's.
#![allow(clippy::unwrap_used)]

#[path = "support/demo_config.rs"]
mod demo_config;

use std::sync::atomic::AtomicBool;

use xpm_torch_core::config::parse_learner;
use xpm_torch_core::learner::{learn, Observer, StepProgress, ValidationProgress};
use xpm_torch_core::runtime::memory::cpu_tensor_cache_bytes;
use xpm_torch_core::Result;

/// The cache's size after each step and when each validation starts.
#[derive(Default)]
struct CacheWatch {
    after_steps: Vec<usize>,
    validation_starts: Vec<usize>,
}

impl Observer for CacheWatch {
    fn on_step(&mut self, _: StepProgress) -> Result<()> {
        self.after_steps.push(cpu_tensor_cache_bytes());
        Ok(())
    }

    fn on_validation(&mut self, progress: ValidationProgress<'_>) -> Result<()> {
        if progress.done == 0 {
            self.validation_starts.push(cpu_tensor_cache_bytes());
        }
        Ok(())
    }
}

#[test]
fn validation_starts_with_the_training_steps_blocks_handed_back() {
    let mut learner = demo_config::demo();
    // Activations of 128 pairs × 512 floats: blocks large enough for the cache.
    learner["model"]["hidden_dims"] = serde_json::json!([512, 256]);
    learner["max_epochs"] = 2.into();
    learner["steps_per_epoch"] = 5.into();
    let config = parse_learner(&learner.to_string()).unwrap();
    let mut watch = CacheWatch::default();
    learn(&config, &mut watch, &AtomicBool::new(false)).unwrap();
    assert_eq!(watch.after_steps.len(), 10);
    assert!(
        watch.after_steps.iter().all(|&bytes| bytes > 0),
        "the steps keep their blocks: {:?}",
        watch.after_steps
    );
    assert_eq!(watch.validation_starts, vec![0, 0]);
}
