// Runtime settings tch does not expose: autocast on any device type with any dtype (tch's own
// `autocast` is CUDA-only and fp16-only), the foreach gradient unscale of a loss scaler, the
// float32 matmul precision, deterministic algorithms and inference mode. Like shim.cpp, every entry point
// catches all exceptions and returns a malloc'ed message, or null on success.

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <c10/core/InferenceMode.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "ffi.h"

namespace {

// `device` is 0 for the CPU, 1 for CUDA (the only two this core runs on).
at::DeviceType device_type(int device) { return device == 1 ? at::kCUDA : at::kCPU; }

}  // namespace

// Enters an autocast region: saves the previous state in `previous_enabled` and
// `previous_dtype` (a c10::ScalarType value) for `xpm_autocast_exit`.
extern "C" char* xpm_autocast_enter(int device, int dtype, int* previous_enabled,
                                    int* previous_dtype) {
  XPM_FFI_GUARD({
    auto type = device_type(device);
    *previous_enabled = at::autocast::is_autocast_enabled(type) ? 1 : 0;
    *previous_dtype = static_cast<int>(at::autocast::get_autocast_dtype(type));
    at::autocast::set_autocast_dtype(type, static_cast<at::ScalarType>(dtype));
    at::autocast::set_autocast_enabled(type, true);
    at::autocast::increment_nesting();
  })
}

// Leaves an autocast region, restoring the saved state; the cast cache is cleared when the
// outermost region ends (as torch.autocast does).
extern "C" char* xpm_autocast_exit(int device, int previous_enabled, int previous_dtype) {
  XPM_FFI_GUARD({
    auto type = device_type(device);
    at::autocast::set_autocast_enabled(type, previous_enabled != 0);
    at::autocast::set_autocast_dtype(type, static_cast<at::ScalarType>(previous_dtype));
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  })
}

extern "C" char* xpm_autocast_state(int device, int* enabled, int* dtype) {
  XPM_FFI_GUARD({
    auto type = device_type(device);
    *enabled = at::autocast::is_autocast_enabled(type) ? 1 : 0;
    *dtype = static_cast<int>(at::autocast::get_autocast_dtype(type));
  })
}

// Multiplies every gradient by `inv_scale` in place and sets `found_inf` to 1 when any of them
// holds an infinity or a NaN.
extern "C" char* xpm_amp_unscale(void* const* grads, int n, void* found_inf, void* inv_scale) {
  XPM_FFI_GUARD({
    std::vector<at::Tensor> g;
    g.reserve(n);
    for (int i = 0; i < n; ++i) g.push_back(*static_cast<const at::Tensor*>(grads[i]));
    at::_amp_foreach_non_finite_check_and_unscale_(g, *static_cast<at::Tensor*>(found_inf),
                                                   *static_cast<const at::Tensor*>(inv_scale));
  })
}

// `precision` is "highest", "high" or "medium".
extern "C" char* xpm_set_float32_matmul_precision(const char* precision) {
  XPM_FFI_GUARD(at::globalContext().setFloat32MatmulPrecision(std::string(precision)))
}

extern "C" char* xpm_float32_matmul_precision(int* precision) {
  XPM_FFI_GUARD(*precision = static_cast<int>(at::globalContext().float32MatmulPrecision()))
}

extern "C" char* xpm_set_deterministic(int enabled) {
  XPM_FFI_GUARD({
    at::globalContext().setDeterministicAlgorithms(enabled != 0, /*warn_only=*/false);
    at::globalContext().setDeterministicCuDNN(enabled != 0);
    at::globalContext().setBenchmarkCuDNN(false);
  })
}

extern "C" char* xpm_deterministic(int* enabled) {
  XPM_FFI_GUARD(*enabled = at::globalContext().deterministicAlgorithms() ? 1 : 0)
}

// Enters inference mode on this thread (no autograd recording, no version counters or view
// tracking on the tensors made); `*guard` is for `xpm_inference_mode_exit` on the same thread.
extern "C" char* xpm_inference_mode_enter(void** guard) {
  XPM_FFI_GUARD(*guard = new c10::InferenceMode(true))
}

// Leaves the inference mode `guard` entered, restoring the thread's previous state.
extern "C" char* xpm_inference_mode_exit(void* guard) {
  XPM_FFI_GUARD(delete static_cast<c10::InferenceMode*>(guard))
}

extern "C" int xpm_inference_mode_enabled() { return c10::InferenceMode::is_enabled() ? 1 : 0; }
