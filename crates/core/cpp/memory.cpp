// Device memory statistics of libtorch's caching allocator, for the predictive batcher. Goes
// through the accelerator API (header-inline over the allocator libtorch_cuda registers), so
// nothing here links against libc10_cuda or the CUDA runtime: on a machine without CUDA the
// calls fail with a message instead of the library failing to load.
// Same conventions as shim.cpp: every exception is caught, errors come back as malloc'ed text.

#include <ATen/DeviceAccelerator.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>

namespace {

char* memory_message(const char* what) {
  size_t len = std::strlen(what);
  char* copy = static_cast<char*>(std::malloc(len + 1));
  if (copy != nullptr) std::memcpy(copy, what, len + 1);
  return copy;
}

// Null when the CUDA allocator is reachable, else why not.
const char* cuda_missing() {
  auto accelerator = at::accelerator::getAccelerator(false);
  if (!accelerator.has_value() || *accelerator != c10::DeviceType::CUDA) {
    return "no CUDA accelerator is registered in libtorch (no GPU, or libtorch_cuda not loaded)";
  }
  return nullptr;
}

}  // namespace

// out: allocated now, peak allocated since the last reset, reserved by the cache, free on the
// device, total on the device (bytes).
extern "C" char* xpm_cuda_memory(int device, uint64_t* out) {
  try {
    if (const char* why = cuda_missing()) return memory_message(why);
    const auto index = static_cast<c10::DeviceIndex>(device);
    const auto stats = at::accelerator::getDeviceStats(index);
    const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    const auto info = at::accelerator::getMemoryInfo(index);
    out[0] = static_cast<uint64_t>(stats.allocated_bytes[aggregate].current);
    out[1] = static_cast<uint64_t>(stats.allocated_bytes[aggregate].peak);
    out[2] = static_cast<uint64_t>(stats.reserved_bytes[aggregate].current);
    out[3] = static_cast<uint64_t>(info.first);
    out[4] = static_cast<uint64_t>(info.second);
    return nullptr;
  } catch (const std::exception& e) {
    return memory_message(e.what());
  } catch (...) {
    return memory_message("unknown C++ exception");
  }
}

extern "C" char* xpm_cuda_reset_peak(int device) {
  try {
    if (const char* why = cuda_missing()) return memory_message(why);
    at::accelerator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
    return nullptr;
  } catch (const std::exception& e) {
    return memory_message(e.what());
  } catch (...) {
    return memory_message("unknown C++ exception");
  }
}

extern "C" char* xpm_cuda_empty_cache() {
  try {
    if (const char* why = cuda_missing()) return memory_message(why);
    at::accelerator::emptyCache();
    return nullptr;
  } catch (const std::exception& e) {
    return memory_message(e.what());
  } catch (...) {
    return memory_message("unknown C++ exception");
  }
}
