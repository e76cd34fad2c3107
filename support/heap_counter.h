// LiveHeapBytes: the heap bytes that live operator-new allocations of this
// process occupy, counted as glibc holds them (usable size plus the 8-byte
// chunk header), so allocator overhead counts as it does in RSS.
//
// Linking this library replaces the global operator new and delete of the
// executable (heap_counter.cc): only benchmarks that count bytes per
// document link it. mallinfo2 cannot do this job: it counts chunks cached in
// glibc's per-thread cache as in use, and reusing those hides allocations.
// Thread-safe: the count is an atomic.
#ifndef SKIFF_SUPPORT_HEAP_COUNTER_H_
#define SKIFF_SUPPORT_HEAP_COUNTER_H_

#include <cstdint>

namespace skiff::support {

int64_t LiveHeapBytes();

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_HEAP_COUNTER_H_
