//! Calls into `cpp/autocast.cpp`: autocast state, the loss scaler's foreach unscale, the
//! global float32/determinism settings of libtorch and inference mode.

use std::ffi::{c_char, c_int, c_void, CString};

use tch::{Device, Kind, Tensor};

use crate::ffi::checked;
use crate::{Error, Result};

extern "C" {
    fn xpm_autocast_enter(
        device: c_int,
        dtype: c_int,
        previous_enabled: *mut c_int,
        previous_dtype: *mut c_int,
    ) -> *mut c_char;
    fn xpm_autocast_exit(
        device: c_int,
        previous_enabled: c_int,
        previous_dtype: c_int,
    ) -> *mut c_char;
    #[cfg(test)]
    fn xpm_autocast_state(device: c_int, enabled: *mut c_int, dtype: *mut c_int) -> *mut c_char;
    fn xpm_amp_unscale(
        grads: *const *mut c_void,
        n: c_int,
        found_inf: *mut c_void,
        inv_scale: *mut c_void,
    ) -> *mut c_char;
    fn xpm_set_float32_matmul_precision(precision: *const c_char) -> *mut c_char;
    fn xpm_float32_matmul_precision(precision: *mut c_int) -> *mut c_char;
    fn xpm_set_deterministic(enabled: c_int) -> *mut c_char;
    fn xpm_deterministic(enabled: *mut c_int) -> *mut c_char;
    fn xpm_inference_mode_enter(guard: *mut *mut c_void) -> *mut c_char;
    fn xpm_inference_mode_exit(guard: *mut c_void) -> *mut c_char;
    fn xpm_inference_mode_enabled() -> c_int;
}

/// libtorch's inference mode on the calling thread while it lives: no gradients, and none of
/// the bookkeeping `no_grad` still does for autograd (version counters, view tracking). What is
/// computed under it must not enter a graph later: it serves scoring and embedding whose
/// results leave as plain numbers.
pub struct InferenceMode {
    guard: *mut c_void,
}

impl InferenceMode {
    /// Enters inference mode on this thread.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn enter() -> Result<Self> {
        let mut guard = std::ptr::null_mut();
        // SAFETY: the out-pointer is valid for the call.
        checked(unsafe { xpm_inference_mode_enter(&mut guard) })?;
        Ok(InferenceMode { guard })
    }

    /// Whether the calling thread is in inference mode.
    pub fn is_enabled() -> bool {
        // SAFETY: reads a thread-local flag.
        unsafe { xpm_inference_mode_enabled() != 0 }
    }
}

impl Drop for InferenceMode {
    fn drop(&mut self) {
        // SAFETY: the guard this value entered, left once, on its own thread (the raw pointer
        // keeps the type neither Send nor Sync). Deleting a guard does not throw.
        let _ = checked(unsafe { xpm_inference_mode_exit(self.guard) });
    }
}

/// The shim's device type code: 0 for the CPU, 1 for CUDA.
fn device_code(device: Device) -> c_int {
    match device {
        Device::Cuda(_) => 1,
        _ => 0,
    }
}

/// The `c10::ScalarType` code of the autocast dtypes (tch keeps its own mapping private).
pub(crate) fn scalar_type_code(kind: Kind) -> Result<c_int> {
    match kind {
        Kind::Half => Ok(5),
        Kind::Float => Ok(6),
        Kind::Double => Ok(7),
        Kind::BFloat16 => Ok(15),
        other => Err(Error::Unsupported(format!(
            "autocast in {other:?}: libtorch autocasts to float16, bfloat16, float32 or float64"
        ))),
    }
}

/// The autocast state of one device type: enabled, and its lower-precision dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AutocastState {
    pub enabled: bool,
    pub dtype: c_int,
}

/// Turns autocast on for `device`'s type in `dtype` and returns the state it replaces.
pub(crate) fn autocast_enter(device: Device, dtype: Kind) -> Result<AutocastState> {
    let (mut enabled, mut previous) = (0, 0);
    let code = scalar_type_code(dtype)?;
    // SAFETY: the out-pointers are valid for the call.
    checked(unsafe { xpm_autocast_enter(device_code(device), code, &mut enabled, &mut previous) })?;
    Ok(AutocastState {
        enabled: enabled != 0,
        dtype: previous,
    })
}

/// Restores the autocast state `previous` for `device`'s type.
pub(crate) fn autocast_exit(device: Device, previous: AutocastState) -> Result<()> {
    // SAFETY: plain values.
    checked(unsafe {
        xpm_autocast_exit(
            device_code(device),
            c_int::from(previous.enabled),
            previous.dtype,
        )
    })
}

/// Whether autocast is on for `device`'s type in this thread, and in which dtype.
#[cfg(test)]
pub(crate) fn autocast_state(device: Device) -> Result<AutocastState> {
    let (mut enabled, mut dtype) = (0, 0);
    // SAFETY: the out-pointers are valid for the call.
    checked(unsafe { xpm_autocast_state(device_code(device), &mut enabled, &mut dtype) })?;
    Ok(AutocastState {
        enabled: enabled != 0,
        dtype,
    })
}

/// libtorch's `_amp_foreach_non_finite_check_and_unscale_`: multiplies `grads` by `inv_scale`
/// in place and sets `found_inf` (a one-element float tensor) when one is not finite.
pub(crate) fn amp_unscale(grads: &[Tensor], found_inf: &Tensor, inv_scale: &Tensor) -> Result<()> {
    let handles = crate::ffi::handles(grads);
    let n = c_int::try_from(handles.len())
        .map_err(|_| Error::Unsupported("gradient unscaling of more than 2^31 tensors".into()))?;
    // SAFETY: every handle is a live tch tensor (an `at::Tensor*`) for the whole call.
    checked(unsafe {
        xpm_amp_unscale(
            handles.as_ptr(),
            n,
            found_inf.as_ptr() as *mut c_void,
            inv_scale.as_ptr() as *mut c_void,
        )
    })
}

/// Sets the process-wide float32 matmul precision (`highest`, `high` or `medium`).
pub(crate) fn set_float32_matmul_precision(precision: &str) -> Result<()> {
    let text = CString::new(precision)
        .map_err(|_| Error::config("float32_matmul_precision", "holds a NUL byte"))?;
    // SAFETY: a NUL-terminated string alive for the call.
    checked(unsafe { xpm_set_float32_matmul_precision(text.as_ptr()) })
}

/// The process-wide float32 matmul precision: 0 highest, 1 high, 2 medium.
pub(crate) fn float32_matmul_precision() -> Result<i32> {
    let mut value = 0;
    // SAFETY: the out-pointer is valid for the call.
    checked(unsafe { xpm_float32_matmul_precision(&mut value) })?;
    Ok(value)
}

/// Turns libtorch's deterministic algorithms (and cuDNN's) on or off, process-wide.
pub(crate) fn set_deterministic(enabled: bool) -> Result<()> {
    // SAFETY: a plain value.
    checked(unsafe { xpm_set_deterministic(c_int::from(enabled)) })
}

/// Whether libtorch's deterministic algorithms are on.
pub(crate) fn deterministic() -> Result<bool> {
    let mut value = 0;
    // SAFETY: the out-pointer is valid for the call.
    checked(unsafe { xpm_deterministic(&mut value) })?;
    Ok(value != 0)
}

#[cfg(test)]
mod inference_mode_tests {
    use super::*;

    #[test]
    fn inference_mode_holds_while_its_guard_lives_and_nests() {
        assert!(!InferenceMode::is_enabled());
        {
            let _outer = InferenceMode::enter().unwrap();
            assert!(InferenceMode::is_enabled());
            {
                let _inner = InferenceMode::enter().unwrap();
                assert!(InferenceMode::is_enabled());
            }
            assert!(InferenceMode::is_enabled());
            let x = Tensor::f_ones([2], (Kind::Float, Device::Cpu)).unwrap();
            assert!(x.is_inference());
        }
        assert!(!InferenceMode::is_enabled());
    }
}
