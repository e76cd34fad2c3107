// MergePatch when an allocation fails part way: the document must stay a
// whole, sorted object. This file replaces the global operator new of the
// doc_test binary with one that can be told to fail once, after a number of
// allocations on the calling thread; by default it never fails.
#include <cstdlib>
#include <new>
#include <string>

#include <gtest/gtest.h>

#include "doc/merge.h"

#include "test/status_matchers.h"

namespace {
thread_local long allocations_until_failure = -1;  // -1: never fail

// Out of line, so that g++ does not see free() meet a pointer from new.
[[gnu::noinline]] void Release(void* p) noexcept { std::free(p); }
}  // namespace

void* operator new(std::size_t size) {
  if (allocations_until_failure == 0) {
    allocations_until_failure = -1;  // one failure: the handlers may allocate
    throw std::bad_alloc();
  }
  if (allocations_until_failure > 0) --allocations_until_failure;
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
// The nothrow form too (std::stable_sort's buffer takes it): libstdc++'s
// own calls the one above, but AddressSanitizer's does not, and its memory
// would then reach the delete below from its allocator.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { Release(p); }
void operator delete(void* p, std::size_t) noexcept { Release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Release(p); }

namespace skiff::doc {
namespace {

// The rebuild path: the patch adds 20 members and removes 10, more than the
// 8 changed in place; keys are long enough to need allocations of their own,
// and a moved-from key would show as "".
TEST(MergePatchFailureTest, AFailedAllocationLeavesTheObjectWholeAndSorted) {
  auto key = [](const char* prefix, int i) {
    return std::string(prefix) + "-a-key-longer-than-fifteen-bytes-" + std::to_string(100 + i);
  };
  Value original = Value::object();
  for (int i = 0; i < 40; ++i) original[key("m", i)] = "value " + std::to_string(i);
  Value patch = Value::object();
  // Each new key sorts right after an existing one, so additions come between
  // members the merge has already moved and members it has not reached.
  for (int i = 0; i < 20; ++i) patch[key("m", 2 * i) + "+"] = {{"nested", key("x", i)}};
  for (int i = 0; i < 10; ++i) patch[key("m", 3 * i)] = nullptr;

  bool succeeded = false;
  for (long fail_after = 0; fail_after < 10'000 && !succeeded; ++fail_after) {
    Value doc = original;
    allocations_until_failure = fail_after;
    Status s = Status::Ok();
    try {
      s = MergePatch(doc, patch);
    } catch (const std::bad_alloc&) {
      s = Internal("bad_alloc before the merge began");  // e.g. in the depth check
    }
    allocations_until_failure = -1;
    succeeded = s.ok();
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kInternal);
    }
    ASSERT_TRUE(doc.is_object());
    // Whole and sorted: keys strictly ascending, each one from the document
    // or the patch; every member the patch does not name keeps its value.
    std::string previous;
    for (const auto& [k, v] : doc.items()) {
      ASSERT_TRUE(previous.empty() || previous < k) << "failing after " << fail_after;
      ASSERT_TRUE(original.contains(k) || patch.contains(k)) << k;
      if (!patch.contains(k)) {
        ASSERT_EQ(v, original[k]) << k;
      }
      previous = k;
    }
    for (const auto& [k, v] : original.items()) {
      if (!patch.contains(k)) {
        ASSERT_TRUE(doc.contains(k)) << k << " lost";
      }
    }
  }
  ASSERT_TRUE(succeeded);
  Value expected = original;
  ASSERT_OK(MergePatch(expected, patch));
  EXPECT_EQ(expected.size(), 50u);
}

}  // namespace
}  // namespace skiff::doc
