//! Models on the runtime's device and dtype: [`place_parameters`] moves them in place, and
//! [`PlacedModel`] moves batches, runs the forward under autocast and casts the outputs back.

use tch::Tensor;

use super::{Model, NamedParameter, OutputType};
use crate::data::{EncodedRows, ScoreInput};
use crate::runtime::Runtime;
use crate::Result;

/// Moves every parameter of `model` to the runtime's device and parameter dtype, in place (as
/// `module.to()` does: shared parameters stay one tensor, handles held elsewhere follow).
/// Call it before optimizers allocate their state.
///
/// # Errors
/// A libtorch error (e.g. out of device memory).
pub fn place_parameters(model: &dyn Model, runtime: &Runtime) -> Result<()> {
    let kind = runtime.precision.parameter_kind();
    let _no_grad = tch::no_grad_guard();
    for p in model.named_parameters() {
        let mut tensor = p.tensor;
        if tensor.device() == runtime.device && tensor.kind() == kind {
            continue;
        }
        let placed = tensor
            .f_detach()?
            .f_to_device(runtime.device)?
            .f_to_kind(kind)?;
        tensor.f_set_data(&placed)?;
    }
    Ok(())
}

/// A model seen through the runtime: batches go to its device and dtype, the forward runs
/// under autocast for mixed precision, and outputs come back in the losses' dtype. Trainers
/// and listeners call it like any model.
pub struct PlacedModel {
    inner: Box<dyn Model>,
    runtime: Runtime,
}

impl PlacedModel {
    /// Places `inner`'s parameters (see [`place_parameters`]) and wraps it.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn new(inner: Box<dyn Model>, runtime: Runtime) -> Result<Self> {
        place_parameters(inner.as_ref(), &runtime)?;
        Ok(PlacedModel { inner, runtime })
    }
}

impl Model for PlacedModel {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let input = input.map(|t| self.runtime.input(t))?;
        let output = {
            let _autocast = self.runtime.autocast()?;
            self.inner.forward(&input)?
        };
        self.runtime.output(&output)
    }

    fn embed(&self, texts: &EncodedRows, query: bool) -> Result<Tensor> {
        let texts = texts.map(&|t| self.runtime.input(t))?;
        let output = {
            let _autocast = self.runtime.autocast()?;
            self.inner.embed(&texts, query)?
        };
        self.runtime.output(&output)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.inner.named_parameters()
    }

    fn output_type(&self) -> OutputType {
        self.inner.output_type()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.inner.share(target, source)
    }

    fn set_training(&mut self, training: bool) {
        self.inner.set_training(training);
    }

    fn inference_mode_safe(&self) -> bool {
        self.inner.inference_mode_safe()
    }

    fn new_weights(&self) -> Vec<String> {
        self.inner.new_weights()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tch::{Device, Kind};

    use super::*;
    use crate::config::MlpScorerConfig;
    use crate::models::MlpScorer;
    use crate::rng::Rng;
    use crate::runtime::Hardware;

    fn runtime(precision: &str) -> Runtime {
        let config = crate::config::tests_support::cpu_fabric(precision);
        Runtime::for_hardware(&config, Hardware::with_gpus(0))
            .unwrap()
            .0
    }

    fn mlp() -> Box<dyn Model> {
        let config = MlpScorerConfig {
            input_dim: 3,
            hidden_dims: vec![4],
        };
        Box::new(MlpScorer::new(&config, &mut Rng::new(3)).unwrap())
    }

    /// Records the dtype of its first layer's output, inside the forward.
    struct Probe {
        inner: Box<dyn Model>,
        seen: Arc<Mutex<Vec<Kind>>>,
    }

    impl Model for Probe {
        fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
            let params = self.inner.named_parameters();
            let hidden = input
                .features("Probe")?
                .f_linear(&params[0].tensor, Some(&params[1].tensor))?;
            if let Ok(mut seen) = self.seen.lock() {
                seen.push(hidden.kind());
            }
            self.inner.forward(input)
        }
        fn named_parameters(&self) -> Vec<NamedParameter> {
            self.inner.named_parameters()
        }
        fn share(&mut self, target: &str, source: &str) -> Result<()> {
            self.inner.share(target, source)
        }
    }

    fn observed_kinds(precision: &str) -> (Vec<Kind>, Kind, Kind) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let probe = Probe {
            inner: mlp(),
            seen: seen.clone(),
        };
        let model = PlacedModel::new(Box::new(probe), runtime(precision)).unwrap();
        let x = ScoreInput::Features(Tensor::ones([5, 3], (Kind::Float, Device::Cpu)));
        let out = model.forward(&x).unwrap();
        let param = model.named_parameters()[0].tensor.kind();
        let kinds = seen.lock().unwrap().clone();
        (kinds, out.kind(), param)
    }

    #[test]
    fn bf16_mixed_runs_linear_layers_in_bf16_with_float32_weights_and_outputs() {
        assert_eq!(
            observed_kinds("bf16-mixed"),
            (vec![Kind::BFloat16], Kind::Float, Kind::Float)
        );
        assert_eq!(
            observed_kinds("32-true"),
            (vec![Kind::Float], Kind::Float, Kind::Float)
        );
        assert_eq!(
            observed_kinds("64-true"),
            (vec![Kind::Double], Kind::Double, Kind::Double)
        );
        assert_eq!(
            observed_kinds("bf16-true"),
            (vec![Kind::BFloat16], Kind::Float, Kind::BFloat16)
        );
    }

    #[test]
    fn placing_keeps_shared_parameters_one_tensor_and_outside_handles_current() {
        let mut square = MlpScorer::new(
            &MlpScorerConfig {
                input_dim: 2,
                hidden_dims: vec![2, 2],
            },
            &mut Rng::new(2),
        )
        .unwrap();
        square.share("layers.1.weight", "layers.0.weight").unwrap();
        let held = square.named_parameters()[0].tensor.shallow_clone();
        let model = PlacedModel::new(Box::new(square), runtime("64-true")).unwrap();
        let params = model.named_parameters();
        assert_eq!(held.kind(), Kind::Double);
        assert!(params.iter().all(|p| p.tensor.kind() == Kind::Double));
        assert!(params.iter().all(|p| p.tensor.requires_grad()));
        assert_eq!(params[2].tensor.data_ptr(), params[0].tensor.data_ptr());
        assert_eq!(params[0].tensor.data_ptr(), held.data_ptr());
    }

    #[test]
    fn sixty_four_true_saves_float64_tensors() {
        let model = PlacedModel::new(mlp(), runtime("64-true")).unwrap();
        let dir = crate::config::tests_support::scratch_dir();
        let file = dir.join("model.safetensors");
        model.save(&file).unwrap();
        let saved = Tensor::read_safetensors(&file).unwrap();
        assert!(saved.iter().all(|(_, t)| t.kind() == Kind::Double));
    }
}
