//! [`AutocastGuard`]: libtorch's autocast to a lower-precision dtype on one device type while
//! alive (per thread; guards nest), for mixed-precision forwards.

use tch::{Device, Kind};

use super::ffi::{autocast_enter, autocast_exit, AutocastState};
use crate::Result;

/// Autocast on one device type while alive: eligible operations (matrix products, linear
/// layers, ...) run in the lower-precision dtype. Leaving restores the previous state, so guards
/// nest. Autocast is per thread, like libtorch's grad mode.
#[derive(Debug)]
#[must_use = "autocast ends when the guard is dropped"]
pub struct AutocastGuard {
    device: Device,
    previous: AutocastState,
}

impl AutocastGuard {
    /// Turns autocast on for `device`'s type (CPU or CUDA) in `dtype` (`BFloat16` or `Half`).
    ///
    /// # Errors
    /// A libtorch error (e.g. a dtype autocast does not support on that device type).
    pub fn new(device: Device, dtype: Kind) -> Result<Self> {
        let previous = autocast_enter(device, dtype)?;
        Ok(AutocastGuard { device, previous })
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        // Restoring plain thread-local flags cannot fail in practice; a failure here leaves
        // autocast on, which the next guard's exit would restore anyway.
        let _ = autocast_exit(self.device, self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ffi::{autocast_state, scalar_type_code};
    use tch::Tensor;

    fn linear_output_kind() -> Kind {
        let x = Tensor::ones([2, 3], (Kind::Float, Device::Cpu));
        let w = Tensor::ones([4, 3], (Kind::Float, Device::Cpu));
        x.f_linear::<Tensor>(&w, None).unwrap().kind()
    }

    #[test]
    fn cpu_matrix_products_run_in_bf16_inside_the_guard_only() {
        assert_eq!(linear_output_kind(), Kind::Float);
        {
            let _guard = AutocastGuard::new(Device::Cpu, Kind::BFloat16).unwrap();
            assert_eq!(linear_output_kind(), Kind::BFloat16);
            // Elementwise operations are not autocast.
            let x = Tensor::ones([2], (Kind::Float, Device::Cpu));
            assert_eq!(x.f_add(&x).unwrap().kind(), Kind::Float);
        }
        assert_eq!(linear_output_kind(), Kind::Float);
        assert!(!autocast_state(Device::Cpu).unwrap().enabled);
    }

    #[test]
    fn guards_nest_and_restore_the_outer_dtype() {
        let before = autocast_state(Device::Cpu).unwrap();
        let outer = AutocastGuard::new(Device::Cpu, Kind::BFloat16).unwrap();
        {
            let _inner = AutocastGuard::new(Device::Cpu, Kind::Half).unwrap();
            assert_eq!(linear_output_kind(), Kind::Half);
        }
        let state = autocast_state(Device::Cpu).unwrap();
        assert!(state.enabled);
        assert_eq!(state.dtype, scalar_type_code(Kind::BFloat16).unwrap());
        drop(outer);
        assert_eq!(autocast_state(Device::Cpu).unwrap(), before);
    }

    #[test]
    fn gradients_of_autocast_products_reach_float32_weights() {
        let w = Tensor::ones([1, 3], (Kind::Float, Device::Cpu)).set_requires_grad(true);
        let x = Tensor::ones([2, 3], (Kind::Float, Device::Cpu));
        let y = {
            let _guard = AutocastGuard::new(Device::Cpu, Kind::BFloat16).unwrap();
            x.f_linear::<Tensor>(&w, None).unwrap()
        };
        y.f_to_kind(Kind::Float)
            .unwrap()
            .f_sum(None)
            .unwrap()
            .backward();
        assert_eq!(w.grad().kind(), Kind::Float);
        assert_eq!(
            Vec::<f32>::try_from(w.grad().flatten(0, -1)).unwrap(),
            [2.0; 3]
        );
    }
}
