// The few libtorch calls tch does not expose. Every entry point catches all exceptions (a C++
// exception must never cross `extern "C"`) and returns a malloc'ed message, or null on success.
// Tensors arrive as tch's handles, which point to `at::Tensor` objects.

#include <ATen/core/Tensor.h>
#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "ffi.h"

using xpm_ffi::tensors;

extern "C" char* xpm_fused_adam(void* const* params, void* const* grads, void* const* exp_avgs,
                                void* const* exp_avg_sqs, void* const* steps, int n, double lr,
                                double beta1, double beta2, double weight_decay, double eps,
                                int decoupled) {
  XPM_FFI_GUARD({
    auto p = tensors(params, n), g = tensors(grads, n), m = tensors(exp_avgs, n),
         v = tensors(exp_avg_sqs, n), s = tensors(steps, n);
    const std::vector<at::Tensor> no_max_exp_avg_sqs;
    if (decoupled != 0) {
      at::_fused_adamw_(p, g, m, v, no_max_exp_avg_sqs, s, lr, beta1, beta2, weight_decay, eps,
                        /*amsgrad=*/false, /*maximize=*/false);
    } else {
      at::_fused_adam_(p, g, m, v, no_max_exp_avg_sqs, s, lr, beta1, beta2, weight_decay, eps,
                       /*amsgrad=*/false, /*maximize=*/false);
    }
  })
}

extern "C" void xpm_free_message(char* message) { std::free(message); }
