// libtorch's random generators, which tch does not expose: a run's own generators, the
// process's default ones, their states, and a Bernoulli draw from a given generator (dropout).
// Like shim.cpp, every entry point catches all exceptions and returns a malloc'ed message, or
// null on success. A generator crosses as a heap `at::Generator*` (a counted handle).
//
// The CPU default generator is reached through `at::detail::getDefaultCPUGenerator()` only:
// `at::manual_seed` (tch::manual_seed) and `Context::defaultGenerator` ask the accelerator hooks,
// which, asked before libtorch_cuda is loaded, turn CUDA off for the whole process. CUDA
// generators are touched only when a run's device is CUDA (libtorch_cuda is loaded by then).

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>

#include "ffi.h"

namespace {

at::Generator& generator(void* handle) { return *static_cast<at::Generator*>(handle); }

// `device` is 0 for the CPU, 1 for CUDA; `index` the CUDA device.
at::Generator default_generator(int device, int index) {
  if (device == 1) {
    return at::globalContext().defaultGenerator(
        at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index)));
  }
  return at::detail::getDefaultCPUGenerator();
}

}  // namespace

// A new generator of its own for `device`, seeded with `seed`. A CUDA one is a clone of the
// device's default generator (its type lives in libtorch_cuda), then seeded.
extern "C" char* xpm_generator_new(int device, int index, uint64_t seed, void** out) {
  XPM_FFI_GUARD({
    if (device == 1) {
      at::Generator fresh = default_generator(device, index).clone();
      {
        std::lock_guard<std::mutex> lock(fresh.mutex());
        fresh.set_current_seed(seed);
      }
      *out = new at::Generator(std::move(fresh));
    } else {
      *out = new at::Generator(at::make_generator<at::CPUGeneratorImpl>(seed));
    }
  })
}

// A handle on the process's default generator of `device` (shared with every user of it).
extern "C" char* xpm_generator_default(int device, int index, void** out) {
  XPM_FFI_GUARD({ *out = new at::Generator(default_generator(device, index)); })
}

extern "C" void xpm_generator_free(void* handle) { delete static_cast<at::Generator*>(handle); }

// Seeds the generator (its state restarts from `seed`).
extern "C" char* xpm_generator_seed(void* handle, uint64_t seed) {
  XPM_FFI_GUARD({
    at::Generator& gen = generator(handle);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(seed);
  })
}

// The size in bytes of the generator's state.
extern "C" char* xpm_generator_state_size(void* handle, size_t* size) {
  XPM_FFI_GUARD({
    at::Generator& gen = generator(handle);
    std::lock_guard<std::mutex> lock(gen.mutex());
    *size = static_cast<size_t>(gen.get_state().nbytes());
  })
}

// Copies the generator's state (`size` bytes, as `xpm_generator_state_size` says) into `out`.
extern "C" char* xpm_generator_get_state(void* handle, uint8_t* out, size_t size) {
  XPM_FFI_GUARD({
    at::Generator& gen = generator(handle);
    std::lock_guard<std::mutex> lock(gen.mutex());
    at::Tensor state = gen.get_state().contiguous();
    if (static_cast<size_t>(state.nbytes()) != size) {
      throw std::runtime_error("the generator state changed size");
    }
    std::memcpy(out, state.data_ptr(), size);
  })
}

// Replaces the generator's state by `size` bytes from a `xpm_generator_get_state` of a
// generator of the same kind (libtorch checks the size).
extern "C" char* xpm_generator_set_state(void* handle, const uint8_t* state, size_t size) {
  XPM_FFI_GUARD({
    at::Tensor bytes = at::empty({static_cast<int64_t>(size)}, at::kByte);
    std::memcpy(bytes.data_ptr(), state, size);
    at::Generator& gen = generator(handle);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(bytes);
  })
}

// Fills `tensor` in place with draws of Bernoulli(p) from the generator, as dropout's mask
// (`at::dropout` on the CPU draws `empty_like(input).bernoulli_(1 - p)` the same way).
extern "C" char* xpm_bernoulli_(void* tensor, double p, void* handle) {
  XPM_FFI_GUARD({
    at::Tensor& t = *static_cast<at::Tensor*>(tensor);
    t.bernoulli_(p, generator(handle));
  })
}
