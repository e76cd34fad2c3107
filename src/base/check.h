// SKIFF_CHECK: the one way a broken internal invariant stops the process.
//
// Bad input from outside is never checked with this macro: it becomes an error
// Status. A failed check prints the condition and location and aborts, in every
// build type. Thread-safe.
#ifndef SKIFF_BASE_CHECK_H_
#define SKIFF_BASE_CHECK_H_

namespace skiff::internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line);
}  // namespace skiff::internal

#define SKIFF_CHECK(condition)                                                        \
  do {                                                                                \
    if (!(condition)) ::skiff::internal::CheckFailed(#condition, __FILE__, __LINE__); \
  } while (0)

#endif  // SKIFF_BASE_CHECK_H_
