// A caching allocator for libtorch's large CPU tensors, installed as the CPU allocator.
//
// A training step allocates the same large activations every step and frees them at its end.
// Through glibc they either stay in its heap, fragmented, so that resident memory creeps up by
// a quarter, or are handed back by `malloc_trim` and faulted in again, page by page, the next
// step (a tenth of a MiniLM step's time on the CPU). Kept here instead, a freed block waits for
// the next request of its size and is reused as it is: no page faults, no fragmentation. Blocks
// nobody asked for during a whole step go back to the system (`xpm_cpu_cache_release_idle`),
// and `xpm_cpu_cache_release` empties the cache before memory is measured.
//
// Blocks under 64 KiB go to libtorch's default allocator untouched.

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ffi.h"

namespace {

constexpr size_t kSmallest = size_t{1} << 16;
constexpr size_t kPage = size_t{1} << 12;

class CachingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    if (n < kSmallest) return c10::GetDefaultCPUAllocator()->allocate(n);
    const size_t size = (n + kPage - 1) / kPage * kPage;
    void* block = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // The smallest free block that fits, if it is at most a quarter larger than asked.
      auto found = free_.lower_bound(size);
      if (found != free_.end() && found->first <= size + size / 4) {
        block = found->second.block;
        cached_bytes_ -= found->first;
        free_.erase(found);
      }
    }
    if (block == nullptr) block = allocate_new(size);
    return {block, block, &release_block, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release_block; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  // Gives back to the system the blocks that waited since the previous call.
  void release_idle() {
    std::vector<void*> idle;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = free_.begin(); it != free_.end();) {
        if (it->second.generation < generation_) {
          idle.push_back(it->second.block);
          cached_bytes_ -= it->first;
          it = free_.erase(it);
        } else {
          ++it;
        }
      }
      ++generation_;
    }
    forget(idle);
  }

  void release_all() {
    std::vector<void*> all;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& entry : free_) all.push_back(entry.second.block);
      free_.clear();
      cached_bytes_ = 0;
    }
    forget(all);
  }

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_bytes_;
  }

 private:
  struct Free {
    void* block;
    uint64_t generation;
  };

  // A block of its own mapping, page-aligned, so that giving it back returns it to the system
  // at once (through glibc, a large block freed would raise its mapping threshold and later
  // blocks would come from its heap again).
  void* allocate_new(size_t size) {
    void* block = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) {
      release_all();
      block = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (block == MAP_FAILED) throw std::bad_alloc();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_.emplace(block, size);
    return block;
  }

  void forget(const std::vector<void*>& blocks) {
    std::vector<std::pair<void*, size_t>> unmapped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (void* block : blocks) {
        auto size = sizes_.find(block);
        unmapped.emplace_back(block, size->second);
        sizes_.erase(size);
      }
    }
    for (auto& [block, size] : unmapped) munmap(block, size);
  }

  void keep(void* block) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto size = sizes_.find(block);
      if (size != sizes_.end()) {
        free_.emplace(size->second, Free{block, generation_});
        cached_bytes_ += size->second;
        return;
      }
    }
    // A small block from the default allocator, released through the raw interface.
    c10::GetDefaultCPUAllocator()->raw_deleter()(block);
  }

  static void release_block(void* block);

  std::mutex mutex_;
  // Every large block handed out or cached, with its size.
  std::unordered_map<void*, size_t> sizes_;
  // Cached blocks by size.
  std::multimap<size_t, Free> free_;
  size_t cached_bytes_ = 0;
  uint64_t generation_ = 0;
};

// Never destroyed: tensors may outlive every static of the process.
CachingCpuAllocator& cache() {
  static auto* allocator = new CachingCpuAllocator();
  return *allocator;
}

void CachingCpuAllocator::release_block(void* block) { cache().keep(block); }

}  // namespace

// Makes the cache libtorch's CPU allocator (once; later calls do nothing). Tensors allocated
// before keep their own deleter.
extern "C" char* xpm_cpu_cache_install() {
  XPM_FFI_GUARD({
    static std::once_flag installed;
    std::call_once(installed, [] { c10::SetCPUAllocator(&cache(), /*priority=*/1); });
  })
}

extern "C" void xpm_cpu_cache_release_idle() { cache().release_idle(); }

extern "C" void xpm_cpu_cache_release() { cache().release_all(); }

extern "C" size_t xpm_cpu_cache_bytes() { return cache().cached_bytes(); }
