// The CUDA side of xpm-torch: device queries, the CUDA caching allocator's statistics and the
// c10d NCCL process group. A shared library of its own (libxpm_torch_cuda.so), linked against
// libtorch_cuda, so that the addon and the core's binaries keep loading on machines without the
// CUDA libraries; the core opens it at run time when CUDA is asked for (runtime/cuda.rs), after
// loading libtorch_cuda.
//
// Conventions as in crates/core/cpp: every entry point catches all exceptions (none may cross
// `extern "C"`) and returns null on success or a malloc'ed message that
// xpm_cuda_free_message frees.

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <exception>
#include <string>

#include "../core/cpp/ffi.h"

// The library allocates these objects itself, so its view of their size must be libtorch_cuda's:
// the values were read from the allocations inside libtorch_cuda 2.11 (`ProcessGroupNCCL::split`
// and `merge`). A mismatch means other headers than the library's.
static_assert(sizeof(c10d::ProcessGroupNCCL) == 0x458, "ProcessGroupNCCL layout differs");
static_assert(sizeof(c10d::ProcessGroupNCCL::Options) == 0xf8, "NCCL Options layout differs");

namespace {

using xpm_ffi::message;
using xpm_ffi::without_backtrace;

template <typename F>
char* guarded(F&& body) {
  try {
    body();
    return nullptr;
  } catch (const c10::OutOfMemoryError& e) {
    // Kept recognisable for the batchers, which replay a step in smaller pieces.
    return message(without_backtrace(e.what()));
  } catch (const std::exception& e) {
    return message(without_backtrace(e.what()));
  } catch (...) {
    return message("unknown C++ exception");
  }
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

}  // namespace

extern "C" void xpm_cuda_free_message(char* text) { std::free(text); }

// The number of CUDA devices this process can use; an error (no driver, no device) otherwise.
extern "C" char* xpm_cuda_device_count(int* count) {
  *count = 0;
  return guarded([&] { check(cudaGetDeviceCount(count), "cannot count the CUDA devices"); });
}

// Driver and runtime versions as CUDA encodes them (1000 * major + 10 * minor); 0 when the
// driver is missing.
extern "C" char* xpm_cuda_versions(int* driver, int* runtime) {
  *driver = 0;
  *runtime = 0;
  return guarded([&] {
    check(cudaRuntimeGetVersion(runtime), "cannot read the CUDA runtime version");
    check(cudaDriverGetVersion(driver), "cannot read the CUDA driver version");
  });
}

// The NCCL version libtorch_cuda was built with, e.g. "2.28.9", into `out` (NUL-terminated).
extern "C" char* xpm_cuda_nccl_version(char* out, int capacity) {
  return guarded([&] {
    const std::string version = c10d::getNcclVersion();
    std::snprintf(out, static_cast<size_t>(capacity), "%s", version.c_str());
  });
}

// Device `device`: its name (into `name`), total memory in bytes, compute capability.
extern "C" char* xpm_cuda_device_properties(int device, char* name, int capacity,
                                            uint64_t* total_memory, int* major, int* minor) {
  return guarded([&] {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cannot read the CUDA device properties");
    std::snprintf(name, static_cast<size_t>(capacity), "%s", prop.name);
    *total_memory = static_cast<uint64_t>(prop.totalGlobalMem);
    *major = prop.major;
    *minor = prop.minor;
  });
}

// out: allocated now, peak allocated since the last reset, reserved by the cache, peak
// reserved, free on the device, total on the device (bytes).
extern "C" char* xpm_cuda_memory(int device, uint64_t* out) {
  return guarded([&] {
    namespace alloc = c10::cuda::CUDACachingAllocator;
    const auto index = static_cast<c10::DeviceIndex>(device);
    const auto stats = alloc::getDeviceStats(index);
    const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    {
      c10::cuda::CUDAGuard guard(index);
      check(cudaMemGetInfo(&free_bytes, &total_bytes), "cannot read the CUDA device memory");
    }
    out[0] = static_cast<uint64_t>(stats.allocated_bytes[aggregate].current);
    out[1] = static_cast<uint64_t>(stats.allocated_bytes[aggregate].peak);
    out[2] = static_cast<uint64_t>(stats.reserved_bytes[aggregate].current);
    out[3] = static_cast<uint64_t>(stats.reserved_bytes[aggregate].peak);
    out[4] = static_cast<uint64_t>(free_bytes);
    out[5] = static_cast<uint64_t>(total_bytes);
  });
}

extern "C" char* xpm_cuda_reset_peak(int device) {
  return guarded([&] {
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
  });
}

// Returns the cached, unused blocks of every device to the driver (after an out-of-memory).
extern "C" char* xpm_cuda_empty_cache() {
  return guarded([] { c10::cuda::CUDACachingAllocator::emptyCache(); });
}

// Caps the caching allocator of `device` at `fraction` of its memory: beyond it an allocation
// fails with a real CUDA out-of-memory (tests set a budget this way).
extern "C" char* xpm_cuda_set_memory_fraction(int device, double fraction) {
  return guarded([&] {
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction,
                                                       static_cast<c10::DeviceIndex>(device));
  });
}

// Waits for every kernel queued on `device` (non-blocking copies included).
extern "C" char* xpm_cuda_synchronize(int device) {
  return guarded([&] {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    check(cudaDeviceSynchronize(), "CUDA synchronisation failed");
  });
}

// The NCCL backend of one rank over `store` (a `c10d::Store*` whose reference the caller keeps),
// bound to CUDA device `device` and connected eagerly, so that a rank without its GPU fails
// here rather than at the first collective. `out` receives a `c10d::Backend*` holding one
// reference, for `c10::intrusive_ptr<c10d::Backend>::reclaim` on the caller's side.
extern "C" char* xpm_cuda_nccl_backend(void* store, int rank, int world, int device,
                                       int64_t timeout_ms, void** out) {
  *out = nullptr;
  return guarded([&] {
    if (device < 0) throw std::invalid_argument("NCCL needs a CUDA device index");
    const auto index = static_cast<c10::DeviceIndex>(device);
    c10::cuda::set_device(index);
    // A collective's wait then blocks until it completes or times out and throws, as Gloo's
    // does, so that a dead or hung peer is reported by the core instead of the watchdog
    // aborting the process. The constructor reads it; a user's own setting wins.
    setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    auto shared = c10::intrusive_ptr<c10d::Store>::reclaim_copy(static_cast<c10d::Store*>(store));
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = std::chrono::milliseconds(timeout_ms);
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(shared, rank, world, options);
    const c10::Device cuda(c10::DeviceType::CUDA, index);
    group->setBoundDeviceId(cuda);
    group->eagerConnectSingleDevice(cuda);
    c10::intrusive_ptr<c10d::Backend> backend = group;
    *out = backend.release();
  });
}
