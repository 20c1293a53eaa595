// Declarations-only stand-in for gloo's header; see ../README.md. The shim only holds contexts
// through libtorch's own pointers; `setTimeout` is declared because an inline member of
// `ProcessGroupGloo` calls it (libtorch_cpu exports the definition).
#pragma once

#include <chrono>

namespace gloo {

class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);

 private:
  Context() = delete;
};

}  // namespace gloo
