// Distributed primitives over libtorch's c10d: TCPStore rendezvous, the Gloo backend (or one a
// factory makes: the NCCL one of the CUDA library), collectives and a bucketed gradient
// all-reduce. Every entry point catches all exceptions (a C++ exception
// must never cross `extern "C"`) and returns a malloc'ed message, or null on success.
//
// The wheel ships no gloo headers: `gloo-stub/` declares just enough for `ProcessGroupGloo.hpp`
// to parse (see its README). This is the only file that includes that header.

#define USE_C10D_GLOO 1

#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros_like.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <unistd.h>

#include <c10/util/Logging.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ffi.h"

// The shim allocates these objects itself, so its view of their size must be libtorch's: the
// values were read from the allocations inside libtorch_cpu 2.11 (`ProcessGroupGloo::split`,
// `Options::create_default`). A mismatch means other headers than the library's.
static_assert(sizeof(c10d::ProcessGroupGloo) == 0x1e8, "ProcessGroupGloo layout differs");
static_assert(sizeof(c10d::ProcessGroupGloo::Options) == 0xb0, "Gloo Options layout differs");

namespace {

using xpm_ffi::message;
using xpm_ffi::without_backtrace;

// Prefix of the messages of calls refused before any communication.
constexpr const char* kInvalidArgument = "invalid argument: ";

// Runs `body`, turning any exception into the message the Rust side reads.
template <typename F>
char* guarded(F&& body) {
  try {
    body();
    return nullptr;
  } catch (const std::invalid_argument& e) {
    // Refused before anything was sent: the group is still usable.
    return message(std::string(kInvalidArgument) + e.what());
  } catch (const std::exception& e) {
    return message(without_backtrace(e.what()));
  } catch (...) {
    return message("unknown C++ exception");
  }
}

using xpm_ffi::tensors;

c10d::ReduceOp reduce_op(int op) {
  switch (op) {
    case 0:
      return c10d::ReduceOp::SUM;
    case 1:
      return c10d::ReduceOp::MAX;
    case 2:
      return c10d::ReduceOp::MIN;
    default:
      throw std::invalid_argument("unknown reduce operation " + std::to_string(op));
  }
}

// The backends need dense contiguous buffers on their device; a strided tensor, or a CPU one
// under a GPU backend (flags, layout checks), is reduced through a copy.
struct Buffer {
  at::Tensor target;
  at::Tensor work;
};

Buffer buffer_for(const at::Tensor& t, const std::optional<c10::Device>& staging) {
  if (!t.defined()) throw std::invalid_argument("an undefined tensor was passed to a collective");
  if (t.is_sparse()) throw std::invalid_argument("sparse tensors are not supported");
  if (staging && t.device() != *staging) return Buffer{t, t.to(*staging).contiguous()};
  return Buffer{t, t.is_contiguous() ? t : t.contiguous()};
}

void write_back(const std::vector<Buffer>& buffers) {
  for (const auto& b : buffers) {
    if (!b.work.is_same(b.target)) b.target.copy_(b.work);
  }
}

std::string host_name() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

// Makes this rank's backend over `store` (a c10d::Store* the caller keeps a reference to):
// null and a c10d::Backend* holding one reference in `*out`, or a malloc'ed message.
using XpmBackendFactory = char* (*)(void* store, int rank, int world, int device,
                                    int64_t timeout_ms, void** out);

struct XpmDist {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  int rank;
  int world;
  // One line per rank: "<host> <pid>", so that a failed collective can tell which peer died.
  std::string peers;
  // The backend's device when it is not the CPU's: other tensors travel through a copy there.
  std::optional<c10::Device> staging;
};

extern "C" char* xpm_dist_new(const char* master_addr, int master_port, int master_listen_fd,
                              int rank, int world,
                              const char* gloo_interface, int loopback_device,
                              int64_t timeout_ms, int64_t rendezvous_timeout_ms,
                              XpmBackendFactory factory, int device, XpmDist** out) {
  *out = nullptr;
  return guarded([&] {
    if (master_port < 0 || master_port > 65535 || (master_port == 0 && world > 1))
      throw std::invalid_argument("master port " + std::to_string(master_port) +
                                  " is out of range");
    const std::chrono::milliseconds timeout(timeout_ms);
    const std::chrono::milliseconds rendezvous_timeout(rendezvous_timeout_ms);

    // As PyTorch does at import: TORCH_CPP_LOG_LEVEL then decides what c10d logs (its
    // rendezvous retries), instead of c10's default of everything from warnings up.
    static std::once_flag logging;
    std::call_once(logging, [] { c10::initLogging(); });

    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(master_port);
    store_options.isServer = rank == 0;
    if (rank == 0 && master_listen_fd >= 0) store_options.masterListenFd = master_listen_fd;
    store_options.numWorkers = static_cast<std::size_t>(world);
    store_options.waitWorkers = true;
    store_options.timeout = rendezvous_timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(std::string(master_addr), store_options);
    c10::intrusive_ptr<c10d::Store> store =
        c10::make_intrusive<c10d::PrefixStore>("xpm_torch/0/", tcp);

    // Publish who we are before the backend's rendezvous, which waits for every rank.
    const std::string me = host_name() + " " + std::to_string(getpid());
    store->set("peer/" + std::to_string(rank), std::vector<uint8_t>(me.begin(), me.end()));

    c10::intrusive_ptr<c10d::Backend> backend;
    std::optional<c10::Device> staging;
    if (factory != nullptr) {
      void* made = nullptr;
      if (char* failure = factory(store.get(), rank, world, device, timeout_ms, &made)) {
        std::string text(failure);
        std::free(failure);
        throw std::runtime_error(text);
      }
      backend = c10::intrusive_ptr<c10d::Backend>::reclaim(static_cast<c10d::Backend*>(made));
      staging = c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device));
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      std::string iface(gloo_interface);
      if (!iface.empty()) {
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
      } else if (loopback_device != 0) {
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      options->threads = 2;
      backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, options);
    }

    std::string peers;
    for (int r = 0; r < world; ++r) {
      auto value = store->get("peer/" + std::to_string(r));
      peers.append(value.begin(), value.end());
      peers.push_back('\n');
    }
    auto* dist = new XpmDist{store, backend, rank, world, peers, staging};
    *out = dist;
  });
}

extern "C" void xpm_dist_free(XpmDist* dist) {
  try {
    delete dist;
  } catch (...) {
    // A destructor that throws while tearing down a broken group has nothing left to save.
  }
}

extern "C" const char* xpm_dist_peers(const XpmDist* dist) { return dist->peers.c_str(); }

// In-place all-reduce of each tensor (one collective per tensor, all in flight together).
extern "C" char* xpm_dist_all_reduce(XpmDist* dist, void* const* handles, int n, int op) {
  return guarded([&] {
    c10d::AllreduceOptions options;
    options.reduceOp = reduce_op(op);
    std::vector<Buffer> buffers;
    for (const auto& t : tensors(handles, n)) buffers.push_back(buffer_for(t, dist->staging));
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto& b : buffers) {
      std::vector<at::Tensor> one{b.work};
      works.push_back(dist->backend->allreduce(one, options));
    }
    for (auto& w : works) w->wait();
    write_back(buffers);
  });
}

extern "C" char* xpm_dist_broadcast(XpmDist* dist, void* const* handles, int n, int root) {
  return guarded([&] {
    if (root < 0 || root >= dist->world)
      throw std::invalid_argument("broadcast root " + std::to_string(root) +
                                  " is not a rank of a world of " +
                                  std::to_string(dist->world));
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.rootTensor = 0;
    std::vector<Buffer> buffers;
    for (const auto& t : tensors(handles, n)) buffers.push_back(buffer_for(t, dist->staging));
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto& b : buffers) {
      std::vector<at::Tensor> one{b.work};
      works.push_back(dist->backend->broadcast(one, options));
    }
    for (auto& w : works) w->wait();
    write_back(buffers);
  });
}

extern "C" char* xpm_dist_barrier(XpmDist* dist) {
  return guarded([&] { dist->backend->barrier(c10d::BarrierOptions())->wait(); });
}

// DDP's gradient synchronisation, done after backward: the gradients of `params` (in reverse
// order, as they become ready in backward) are packed into buckets of at most `bucket_bytes`
// per dtype and device, each bucket is summed across ranks while the next one is packed, then
// divided by `divisor` and copied back. A missing gradient counts as zeros (and is set to zeros)
// so that every rank packs the same layout.
extern "C" char* xpm_dist_sync_gradients(XpmDist* dist, void* const* handles, int n,
                                         int64_t bucket_bytes, double divisor) {
  return guarded([&] {
    struct Bucket {
      std::vector<at::Tensor> grads;
      at::Tensor flat;
      c10::intrusive_ptr<c10d::Work> work;
    };
    std::vector<Bucket> buckets;
    int64_t bytes = 0;
    auto params = tensors(handles, n);
    for (auto it = params.rbegin(); it != params.rend(); ++it) {
      at::Tensor& param = *it;
      if (!param.requires_grad()) continue;
      if (!param.grad().defined()) param.mutable_grad() = at::zeros_like(param);
      at::Tensor grad = param.grad();
      if (grad.is_sparse()) throw std::invalid_argument("sparse gradients are not supported");
      const int64_t size = grad.numel() * static_cast<int64_t>(grad.element_size());
      bool fresh = buckets.empty() || bytes + size > bucket_bytes ||
                   buckets.back().grads.front().scalar_type() != grad.scalar_type() ||
                   buckets.back().grads.front().device() != grad.device();
      if (fresh) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().grads.push_back(grad);
      bytes += size;
    }
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    for (auto& b : buckets) {
      std::vector<at::Tensor> pieces;
      pieces.reserve(b.grads.size());
      for (const auto& g : b.grads) pieces.push_back(g.reshape({-1}));
      b.flat = at::cat(pieces);
      // Under a GPU backend, CPU gradients are reduced on its device and copied back below.
      if (dist->staging && b.flat.device() != *dist->staging) b.flat = b.flat.to(*dist->staging);
      std::vector<at::Tensor> one{b.flat};
      b.work = dist->backend->allreduce(one, options);
    }
    for (auto& b : buckets) {
      b.work->wait();
      if (divisor != 1.0) b.flat.div_(divisor);
      int64_t offset = 0;
      for (auto& g : b.grads) {
        g.copy_(b.flat.narrow(0, offset, g.numel()).view(g.sizes()));
        offset += g.numel();
      }
    }
  });
}

extern "C" void xpm_dist_free_message(char* message) { std::free(message); }
