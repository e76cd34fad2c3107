// CountingAllocator: a std-style allocator that adds every allocation to an
// AllocationCount, so a container (or a Boost R-tree, which rebinds it to its
// node types) can say exactly how many bytes it holds.
//
// The count is what was asked of operator new; the heap's own per-chunk
// overhead (8-16 bytes on glibc) is not included, which is why the number of
// allocations is kept beside the bytes. Thread-safe: the counters are atomic
// (relaxed), so containers guarded by different locks may share one count.
#ifndef SKIFF_GEO_INTERNAL_COUNTING_ALLOCATOR_H_
#define SKIFF_GEO_INTERNAL_COUNTING_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

namespace skiff::geo::internal {

struct AllocationCount {
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> allocations{0};
};

template <typename T>
class CountingAllocator {
 public:
  using value_type = T;

  explicit CountingAllocator(AllocationCount* count) : count_(count) {}
  template <typename U>
  CountingAllocator(const CountingAllocator<U>& other)  // NOLINT: rebinding is implicit
      : count_(other.count()) {}

  T* allocate(size_t n) {
    T* p = static_cast<T*>(::operator new(n * sizeof(T)));
    count_->bytes.fetch_add(static_cast<int64_t>(n * sizeof(T)), std::memory_order_relaxed);
    count_->allocations.fetch_add(1, std::memory_order_relaxed);
    return p;
  }
  void deallocate(T* p, size_t n) {
    count_->bytes.fetch_sub(static_cast<int64_t>(n * sizeof(T)), std::memory_order_relaxed);
    count_->allocations.fetch_sub(1, std::memory_order_relaxed);
    ::operator delete(p);
  }

  AllocationCount* count() const { return count_; }

  template <typename U>
  friend bool operator==(const CountingAllocator& a, const CountingAllocator<U>& b) {
    return a.count() == b.count();
  }

 private:
  AllocationCount* count_;
};

}  // namespace skiff::geo::internal

#endif  // SKIFF_GEO_INTERNAL_COUNTING_ALLOCATOR_H_
