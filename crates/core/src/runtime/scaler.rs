//! [`LossScaler`]: dynamic loss scaling for float16 training, as PyTorch's `GradScaler`, with
//! the scale and the finiteness checks kept on the device; its checkpointed [`ScalerState`].

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::ffi::amp_unscale;
use crate::{Error, Result};

/// How a [`LossScaler`] moves its scale; the defaults are PyTorch's `GradScaler`'s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScalerSettings {
    /// The first scale.
    pub init_scale: f64,
    /// Multiplies the scale after `growth_interval` consecutive finite steps.
    pub growth_factor: f64,
    /// Multiplies the scale after a step with non-finite gradients.
    pub backoff_factor: f64,
    /// Consecutive finite steps before the scale grows.
    pub growth_interval: i64,
}

impl Default for ScalerSettings {
    fn default() -> Self {
        ScalerSettings {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
        }
    }
}

/// What a checkpoint keeps of a [`LossScaler`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScalerState {
    /// The current scale (a power of two, exact in JSON).
    pub scale: f64,
    /// Consecutive finite steps since the scale last changed.
    pub growth_tracker: i64,
}

/// Dynamic loss scaling for float16 training: the loss is multiplied by the scale before
/// backward so that small gradients survive in float16; gradients are unscaled before the
/// optimizer step, which is skipped when one of them is not finite. The scale and the checks
/// stay on the device (libtorch's `_amp_*` kernels); reading them is one sync per step.
#[derive(Debug)]
pub struct LossScaler {
    settings: ScalerSettings,
    scale: Tensor,
    growth_tracker: Tensor,
    found_inf: Tensor,
}

impl LossScaler {
    /// A scaler with PyTorch's defaults on `device`.
    ///
    /// # Errors
    /// A libtorch error while allocating its tensors.
    pub fn new(device: Device) -> Result<Self> {
        Self::with_settings(device, ScalerSettings::default())
    }

    /// A scaler with explicit settings.
    ///
    /// # Errors
    /// A libtorch error while allocating its tensors.
    pub fn with_settings(device: Device, settings: ScalerSettings) -> Result<Self> {
        Ok(LossScaler {
            settings,
            scale: Tensor::f_full([], settings.init_scale, (Kind::Float, device))?,
            growth_tracker: Tensor::f_zeros([], (Kind::Int, device))?,
            found_inf: Tensor::f_zeros([], (Kind::Float, device))?,
        })
    }

    /// The scale tensor (one element, float32, on the device); backward multiplies the loss by
    /// it. It is updated in place, so a handle stays current.
    pub fn scale(&self) -> &Tensor {
        &self.scale
    }

    /// The current scale.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn scale_value(&self) -> Result<f64> {
        Ok(self.scale.f_double_value(&[])?)
    }

    /// Divides the gradients of `params` by the scale, in place; returns whether they are all
    /// finite (when not, the optimizer step must be skipped). Parameters without a gradient are
    /// left alone.
    ///
    /// # Errors
    /// A libtorch error (e.g. gradients on different devices).
    pub fn unscale(&mut self, params: &[Tensor]) -> Result<bool> {
        let _no_grad = tch::no_grad_guard();
        let _ = self.found_inf.f_zero_()?;
        let grads: Vec<Tensor> = params
            .iter()
            .map(Tensor::grad)
            .filter(Tensor::defined)
            .collect();
        if grads.is_empty() {
            return Ok(true);
        }
        // In double before the reciprocal, as PyTorch does: exact for powers of two.
        let inv_scale = self
            .scale
            .f_to_kind(Kind::Double)?
            .f_reciprocal()?
            .f_to_kind(Kind::Float)?;
        amp_unscale(&grads, &self.found_inf, &inv_scale)?;
        Ok(self.found_inf.f_double_value(&[])? == 0.0)
    }

    /// Makes the next [`LossScaler::update`] act as if the last unscale found non-finite
    /// gradients: under DDP, when another rank found some, all ranks skip and back off together.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn record_non_finite(&mut self) -> Result<()> {
        let _ = self.found_inf.f_fill_(1.0)?;
        Ok(())
    }

    /// Moves the scale after a step, from the last [`LossScaler::unscale`]'s finding: halved
    /// (by default) after non-finite gradients, doubled after `growth_interval` finite steps.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn update(&mut self) -> Result<()> {
        let ScalerSettings {
            growth_factor,
            backoff_factor,
            growth_interval,
            ..
        } = self.settings;
        let _ = self.scale.f_internal_amp_update_scale_(
            &self.growth_tracker,
            &self.found_inf,
            growth_factor,
            backoff_factor,
            growth_interval,
        )?;
        Ok(())
    }

    /// The state to checkpoint.
    ///
    /// # Errors
    /// A libtorch error while reading the device values.
    pub fn state(&self) -> Result<ScalerState> {
        Ok(ScalerState {
            scale: self.scale_value()?,
            growth_tracker: self.growth_tracker.f_int64_value(&[])?,
        })
    }

    /// Continues from a checkpointed state.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] for a scale that is not positive and finite; a libtorch error.
    pub fn restore(&mut self, state: &ScalerState) -> Result<()> {
        if !(state.scale.is_finite() && state.scale > 0.0) || state.growth_tracker < 0 {
            return Err(Error::checkpoint(
                "loss scaler state",
                format!(
                    "scale {} / tracker {} is invalid",
                    state.scale, state.growth_tracker
                ),
            ));
        }
        let _no_grad = tch::no_grad_guard();
        let _ = self.scale.f_fill_(state.scale)?;
        let _ = self.growth_tracker.f_fill_(state.growth_tracker)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param_with_grad(values: &[f32]) -> Tensor {
        let p = Tensor::zeros([values.len() as i64], (Kind::Float, Device::Cpu))
            .set_requires_grad(true);
        // The gradient of sum(p * values) is `values`.
        (&p * Tensor::from_slice(values))
            .sum(Kind::Float)
            .backward();
        p
    }

    fn small(interval: i64) -> LossScaler {
        LossScaler::with_settings(
            Device::Cpu,
            ScalerSettings {
                growth_interval: interval,
                ..ScalerSettings::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn starts_at_two_to_the_sixteenth() {
        let s = LossScaler::new(Device::Cpu).unwrap();
        assert_eq!(s.scale_value().unwrap(), 65536.0);
        assert_eq!(ScalerSettings::default().growth_interval, 2000);
    }

    #[test]
    fn finite_gradients_are_divided_by_the_scale() {
        let mut s = small(3);
        let p = param_with_grad(&[65536.0, -131072.0]);
        assert!(s.unscale(&[p.shallow_clone()]).unwrap());
        assert_eq!(Vec::<f32>::try_from(p.grad()).unwrap(), [1.0, -2.0]);
    }

    #[test]
    fn an_infinite_gradient_is_found_and_halves_the_scale() {
        let mut s = small(3);
        let finite = param_with_grad(&[1.0, 1.0]);
        let broken = param_with_grad(&[1.0, f32::INFINITY]);
        assert!(!s
            .unscale(&[finite.shallow_clone(), broken.shallow_clone()])
            .unwrap());
        s.update().unwrap();
        assert_eq!(s.scale_value().unwrap(), 32768.0);
        let nan = param_with_grad(&[f32::NAN]);
        assert!(!s.unscale(&[nan]).unwrap());
        s.update().unwrap();
        assert_eq!(s.scale_value().unwrap(), 16384.0);
    }

    #[test]
    fn the_scale_doubles_after_the_growth_interval_of_finite_steps_only() {
        let mut s = small(3);
        let p = param_with_grad(&[1.0]);
        let step = |s: &mut LossScaler, finite: bool| {
            let _ = p.grad().fill_(if finite { 1.0 } else { f64::INFINITY });
            assert_eq!(s.unscale(&[p.shallow_clone()]).unwrap(), finite);
            s.update().unwrap();
            s.scale_value().unwrap()
        };
        assert_eq!(step(&mut s, true), 65536.0);
        assert_eq!(step(&mut s, true), 65536.0);
        // A non-finite step resets the count of consecutive finite ones.
        assert_eq!(step(&mut s, false), 32768.0);
        assert_eq!(step(&mut s, true), 32768.0);
        assert_eq!(step(&mut s, true), 32768.0);
        assert_eq!(step(&mut s, true), 65536.0);
        assert_eq!(s.state().unwrap().growth_tracker, 0);
    }

    #[test]
    fn state_round_trips() {
        let mut a = small(3);
        let p = param_with_grad(&[1.0]);
        for _ in 0..2 {
            a.unscale(&[p.shallow_clone()]).unwrap();
            a.update().unwrap();
        }
        let _ = p.grad().fill_(f64::NAN);
        a.unscale(&[p.shallow_clone()]).unwrap();
        a.update().unwrap();
        let _ = p.grad().fill_(1.0);
        a.unscale(&[p.shallow_clone()]).unwrap();
        a.update().unwrap();
        let state = a.state().unwrap();
        assert_eq!(
            state,
            ScalerState {
                scale: 32768.0,
                growth_tracker: 1
            }
        );
        let mut b = small(3);
        b.restore(&state).unwrap();
        assert_eq!(b.state().unwrap(), state);
        assert!(b
            .restore(&ScalerState {
                scale: f64::INFINITY,
                growth_tracker: 0
            })
            .is_err());
    }
}
