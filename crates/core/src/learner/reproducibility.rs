//! What makes a run depart from "same seed, same bytes", said at its start rather than found
//! out later. Every random draw of a run comes from a seeded and checkpointed generator
//! (`runtime/generators.rs`, `rng.rs`); what remains are choices made from measurements.

use tch::Device;

use crate::config::{AnyBatcher, LearnerConfig};
use crate::runtime::Runtime;

/// The warnings to give at the start of a run of `config` on `runtime` about what it cannot
/// repeat bit for bit.
pub(crate) fn reproducibility_warnings(config: &LearnerConfig, runtime: &Runtime) -> Vec<String> {
    let mut warnings = Vec::new();
    if matches!(runtime.device, Device::Cuda(_)) && !runtime.deterministic {
        warnings.push(
            "learner.fabric_config.deterministic is off: on CUDA some kernels (index_add, \
             scatter_add, embedding backward, ...) add in a varying order, so two runs with one \
             seed may differ in the last bits; set deterministic: true to repeat them exactly"
                .to_string(),
        );
    }
    for (path, trainer) in config.trainer.loss_trainers("learner.trainer") {
        let what = match trainer.batcher {
            AnyBatcher::Batcher(_) => continue,
            AnyBatcher::PowerAdaptativeBatcher(_) => {
                "the PowerAdaptativeBatcher shrinks micro-batches after running out of memory"
            }
            AnyBatcher::PredictiveBatcher(_) => {
                "the PredictiveBatcher sizes micro-batches from the memory it measures"
            }
        };
        warnings.push(format!(
            "{path}.batcher: {what}, so how a batch is split depends on the machine's memory at the \
             time; a different split sums in another order and draws dropout masks per \
             micro-batch, so runs repeat bit for bit only when the splits are the same"
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_learner;
    use crate::config::tests_support::demo_config_json;
    use crate::runtime::Hardware;

    fn runtime(config: &LearnerConfig, cuda_devices: usize) -> Runtime {
        Runtime::for_hardware(&config.fabric_config, Hardware::with_gpus(cuda_devices))
            .unwrap()
            .0
    }

    #[test]
    fn a_cpu_run_with_a_plain_batcher_repeats_exactly() {
        let config = parse_learner(&demo_config_json()).unwrap();
        assert!(reproducibility_warnings(&config, &runtime(&config, 0)).is_empty());
    }

    #[test]
    fn cuda_without_determinism_and_memory_batchers_are_reported() {
        let json = demo_config_json().replace(
            "\"xpm_torch.batchers.Batcher\"",
            "\"xpm_torch.batchers.PowerAdaptativeBatcher\"",
        );
        let config = parse_learner(&json).unwrap();
        let warnings = reproducibility_warnings(&config, &runtime(&config, 1));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("deterministic: true"), "{warnings:?}");
        assert!(
            warnings[1].starts_with("learner.trainer.batcher: the PowerAdaptativeBatcher"),
            "{warnings:?}"
        );
    }
}
