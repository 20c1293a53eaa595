// What every C++ file behind the Rust FFI shares (shim, autocast, generators, dist and the CUDA
// library): errors leave as malloc'ed messages the Rust side reads and frees, and tensors arrive
// as tch's handles, which point to `at::Tensor` objects.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace xpm_ffi {

// A malloc'ed copy of `what` (null when out of memory).
inline char* message(const std::string& what) {
  char* copy = static_cast<char*>(std::malloc(what.size() + 1));
  if (copy != nullptr) std::memcpy(copy, what.c_str(), what.size() + 1);
  return copy;
}

// libtorch appends a C++ backtrace to its messages; the Rust side wants the first part only.
inline std::string without_backtrace(const char* what) {
  std::string text(what);
  auto cut = text.find("Exception raised from");
  if (cut != std::string::npos) text.erase(cut);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

inline std::vector<at::Tensor> tensors(void* const* handles, int n) {
  std::vector<at::Tensor> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) out.push_back(*static_cast<const at::Tensor*>(handles[i]));
  return out;
}

}  // namespace xpm_ffi

// The body of an `extern "C"` entry point: null on success, else the exception's message (a C++
// exception must never cross into Rust). Variadic: a body's top-level commas are its own.
#define XPM_FFI_GUARD(...)                              \
  try {                                                 \
    __VA_ARGS__;                                        \
    return nullptr;                                     \
  } catch (const std::exception& e) {                   \
    return xpm_ffi::message(e.what());                  \
  } catch (...) {                                       \
    return xpm_ffi::message("unknown C++ exception");   \
  }
