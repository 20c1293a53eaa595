// libtorch's random generators, which tch does not expose: a run's own generators, the
// process's default ones, their states, and dropout masks drawn from a given generator.
// Like shim.cpp, every entry point catches all exceptions and returns a malloc'ed message, or
// null on success. A generator crosses as a heap `at::Generator*` (a counted handle).
//
// The CPU default generator is reached through `at::detail::getDefaultCPUGenerator()` only:
// `at::manual_seed` (tch::manual_seed) and `Context::defaultGenerator` ask the accelerator hooks,
// which, asked before libtorch_cuda is loaded, turn CUDA off for the whole process. CUDA
// generators are touched only when a run's device is CUDA (libtorch_cuda is loaded by then).

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <array>
#include <cmath>
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

// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, SC 2011): four 32-bit words from a 128-bit
// counter and a 64-bit key. Being counter-based, the words of element i depend on (key, i) alone, so the
// mask below comes out the same whichever thread draws which part of it.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, uint64_t key) {
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return c;
}

}  // namespace

// The words of Philox4x32-10 for a 128-bit counter (`counter`, four words) and `key`, for the
// known-answer test.
extern "C" void xpm_philox4x32_10(const uint32_t* counter, uint64_t key, uint32_t* out) {
  const auto words = philox4x32_10({counter[0], counter[1], counter[2], counter[3]}, key);
  for (int i = 0; i < 4; ++i) out[i] = words[i];
}

// Fills the contiguous CPU bool tensor `tensor` with a dropout mask: each element is kept (true)
// with probability `keep`. One 64-bit draw from the generator keys a Philox stream over the
// elements, drawn in parallel (libtorch's CPU `bernoulli_` draws one element at a time from a
// locked Mersenne twister, which made dropout a third of a MiniLM training step). A bool mask is
// what autograd keeps for the backward: a quarter of a float one.
extern "C" char* xpm_dropout_mask_(void* tensor, double keep, void* handle) {
  XPM_FFI_GUARD({
    at::Tensor& t = *static_cast<at::Tensor*>(tensor);
    if (!t.device().is_cpu() || !t.is_contiguous() || t.scalar_type() != at::kBool) {
      throw std::invalid_argument("a dropout mask needs a contiguous bool CPU tensor");
    }
    if (!(keep > 0.0 && keep <= 1.0)) {
      throw std::invalid_argument("the keep probability of a dropout mask must be in (0, 1]");
    }
    uint64_t key = 0;
    {
      at::Generator& gen = generator(handle);
      std::lock_guard<std::mutex> lock(gen.mutex());
      key = gen.get<at::CPUGeneratorImpl>()->random64();
    }
    // keep · 2³², so that a word below it keeps its element (all do when keep is 1).
    const uint64_t threshold = static_cast<uint64_t>(std::ldexp(keep, 32));
    const int64_t n = t.numel();
    const int64_t blocks = (n + 3) / 4;
    bool* data = t.data_ptr<bool>();
    at::parallel_for(0, blocks, 2048, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const auto words = philox4x32_10(
            {static_cast<uint32_t>(b), static_cast<uint32_t>(static_cast<uint64_t>(b) >> 32), 0, 0},
            key);
        const int64_t first = b * 4;
        const int64_t count = std::min<int64_t>(4, n - first);
        for (int64_t j = 0; j < count; ++j) {
          data[first + j] = words[j] < threshold;
        }
      }
    });
  })
}

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
