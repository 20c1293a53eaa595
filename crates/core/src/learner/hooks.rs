//! Learner-level gradient hooks and the trainers' structural hooks (freezing, sharing).

use tch::{Kind, Tensor};

use super::TrainerContext;
use crate::config::{AnyHook, AnyModule, AnyTrainingHook};
use crate::models::Model;
use crate::optim::ParameterSelector;
use crate::{Error, Result};

/// A hook run on the gradients after backward, before the optimizers step.
pub(crate) enum GradientHook {
    /// Scales all gradients so that their global L2 norm is at most `max_norm`.
    Clip { max_norm: f64 },
    /// Logs the global L2 norm of the gradients every step under `tag`.
    Log { tag: String },
}

impl GradientHook {
    pub fn new(config: &AnyHook) -> Self {
        match config {
            AnyHook::GradientClippingHook(c) => GradientHook::Clip {
                max_norm: c.max_norm,
            },
            AnyHook::GradientLogHook(c) => GradientHook::Log {
                tag: c.name.clone(),
            },
        }
    }

    pub fn apply(&self, params: &[Tensor], ctx: &mut TrainerContext) -> Result<()> {
        let grads: Vec<Tensor> = params
            .iter()
            .map(Tensor::grad)
            .filter(Tensor::defined)
            .collect();
        if grads.is_empty() {
            return Ok(());
        }
        let norm = global_norm(&grads)?;
        match self {
            GradientHook::Log { tag } => ctx.log_scalar(tag, norm),
            GradientHook::Clip { max_norm } => {
                if !norm.is_finite() {
                    return Err(Error::NonFinite {
                        step: ctx.step,
                        what: format!("the gradients' L2 norm is {norm}; lower the learning rate or check the data"),
                    });
                }
                let coefficient = max_norm / (norm + 1e-6);
                if coefficient < 1.0 {
                    let _no_grad = tch::no_grad_guard();
                    for mut g in grads {
                        let _ = g.f_mul_scalar_(coefficient)?;
                    }
                }
                Ok(())
            }
        }
    }
}

fn global_norm(grads: &[Tensor]) -> Result<f64> {
    let mut total = 0.0;
    for g in grads {
        total += g
            .f_to_kind(Kind::Double)?
            .f_square()?
            .f_sum(None)?
            .f_double_value(&[])?;
    }
    Ok(total.sqrt())
}

/// Applies a trainer's structural hooks to the model before optimizers see its parameters;
/// returns the names of the frozen parameters.
pub(crate) fn apply_structural_hooks(
    hooks: &[(String, &AnyTrainingHook)],
    model_config: &AnyModule,
    model: &mut dyn Model,
) -> Result<Vec<String>> {
    let mut frozen = Vec::new();
    for (path, hook) in hooks {
        match hook {
            AnyTrainingHook::LayerFreezer(c) => {
                let selector =
                    ParameterSelector::new(&c.selector, model_config, &format!("{path}.selector"))?;
                let selected: Vec<String> = names(model)
                    .into_iter()
                    .filter(|n| selector.selects(n))
                    .collect();
                if selected.is_empty() {
                    return Err(Error::config(
                        format!("{path}.selector"),
                        "selects no parameter of the model",
                    ));
                }
                frozen.extend(selected);
            }
            AnyTrainingHook::LayerSharer(c) => {
                let source =
                    ParameterSelector::new(&c.source, model_config, &format!("{path}.source"))?;
                let target =
                    ParameterSelector::new(&c.target, model_config, &format!("{path}.target"))?;
                let all = names(model);
                let sources: Vec<&String> = all.iter().filter(|n| source.selects(n)).collect();
                let targets: Vec<&String> = all.iter().filter(|n| target.selects(n)).collect();
                if sources.len() != targets.len() || sources.is_empty() {
                    return Err(Error::config(
                        path.clone(),
                        format!("source selects {} parameters and target {}: they must be the same, non-zero number", sources.len(), targets.len()),
                    ));
                }
                for (s, t) in sources.into_iter().zip(targets) {
                    model.share(t, s).map_err(|e| match e {
                        Error::Config { message, .. } => Error::config(path.clone(), message),
                        other => other,
                    })?;
                }
            }
            _ => {}
        }
    }
    Ok(frozen)
}

fn names(model: &dyn Model) -> Vec<String> {
    model
        .named_parameters()
        .into_iter()
        .map(|p| p.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param_with_grad(values: &[f32]) -> Tensor {
        let p = Tensor::from_slice(values).set_requires_grad(true);
        (&p * 1.0).sum(Kind::Float).backward();
        let mut g = p.grad();
        g.copy_(&Tensor::from_slice(values));
        p
    }

    #[test]
    fn clipping_scales_the_global_norm_down_to_max_norm() {
        // Gradients [3, 4] and [12]: global norm 13.
        let params = [param_with_grad(&[3.0, 4.0]), param_with_grad(&[12.0])];
        let mut ctx = TrainerContext::new(None);
        GradientHook::Clip { max_norm: 6.5 }
            .apply(&params, &mut ctx)
            .unwrap();
        let norm = global_norm(&params.iter().map(Tensor::grad).collect::<Vec<_>>()).unwrap();
        assert!((norm - 6.5).abs() < 1e-4, "{norm}");
        // Already small enough: unchanged.
        GradientHook::Clip { max_norm: 100.0 }
            .apply(&params, &mut ctx)
            .unwrap();
        let again = global_norm(&params.iter().map(Tensor::grad).collect::<Vec<_>>()).unwrap();
        assert!((again - norm).abs() < 1e-9);
    }

    #[test]
    fn non_finite_gradients_are_an_error_naming_the_step() {
        let params = [param_with_grad(&[f32::NAN, 1.0])];
        let mut ctx = TrainerContext::new(None);
        ctx.step = 41;
        let err = GradientHook::Clip { max_norm: 1.0 }
            .apply(&params, &mut ctx)
            .unwrap_err();
        assert_eq!(err.code(), "ERR_NON_FINITE");
        assert!(
            err.to_string()
                .starts_with("non-finite values at step 41: the gradients' L2 norm is NaN"),
            "{err}"
        );
    }
}
