#include "support/heap_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

#include <malloc.h>

namespace skiff::support {
namespace {

std::atomic<int64_t> live_bytes{0};

int64_t ChunkBytes(void* p) { return static_cast<int64_t>(malloc_usable_size(p)) + 8; }

}  // namespace

int64_t LiveHeapBytes() { return live_bytes.load(std::memory_order_relaxed); }

namespace {

void* CountedAlloc(std::size_t size) noexcept {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p != nullptr) live_bytes.fetch_add(ChunkBytes(p), std::memory_order_relaxed);
  return p;
}

void CountedFree(void* p) noexcept {
  if (p == nullptr) return;
  live_bytes.fetch_sub(ChunkBytes(p), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace
}  // namespace skiff::support

// The replacements. Aligned forms are not replaced: nothing measured
// allocates over-aligned types.
void* operator new(std::size_t size) {
  void* p = skiff::support::CountedAlloc(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return skiff::support::CountedAlloc(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return skiff::support::CountedAlloc(size);
}
void operator delete(void* p) noexcept { skiff::support::CountedFree(p); }
void operator delete[](void* p) noexcept { skiff::support::CountedFree(p); }
void operator delete(void* p, std::size_t) noexcept { skiff::support::CountedFree(p); }
void operator delete[](void* p, std::size_t) noexcept { skiff::support::CountedFree(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { skiff::support::CountedFree(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { skiff::support::CountedFree(p); }
