// StoreWrapper is how tests inject faults into anything that uses a Store.
#include <gtest/gtest.h>

#include "store/store.h"

#include "test/status_matchers.h"

namespace skiff::store {
namespace {

// Fails every write from the `fail_from`-th on, before it reaches the target.
class FailingWrites : public StoreWrapper {
 public:
  FailingWrites(Store& target, int fail_from) : StoreWrapper(target), fail_from_(fail_from) {}
  Status Write(const WriteBatch& batch) override {
    if (++writes_ >= fail_from_) return Unavailable("injected: disk full");
    return StoreWrapper::Write(batch);
  }

 private:
  int fail_from_;
  int writes_ = 0;
};

TEST(StoreWrapperTest, ForwardsEveryCall) {
  auto target = NewMemoryStore();
  StoreWrapper wrapper(*target);
  EXPECT_EQ(wrapper.kind(), "memory");
  ASSERT_OK(wrapper.Put("t", "k", "v"));
  EXPECT_EQ(*target->Get("t", "k"), "v");
  EXPECT_EQ(*wrapper.Get("t", "k"), "v");
  auto page = wrapper.Scan("t", "", 10);
  ASSERT_OK(page);
  EXPECT_EQ(page->items.size(), 1u);
  EXPECT_EQ(wrapper.counters().transactions, 1u);
}

TEST(StoreWrapperTest, InjectedFailureLeavesTargetUnchanged) {
  auto target = NewMemoryStore();
  FailingWrites faulty(*target, 2);
  ASSERT_OK(faulty.Put("t", "a", "1"));
  EXPECT_STATUS(faulty.Put("t", "b", "1"), kUnavailable);
  EXPECT_EQ(*target->Get("t", "a"), "1");
  EXPECT_EQ(*target->Get("t", "b"), std::nullopt);
}

TEST(OpenStoreTest, RejectsUnknownUrls) {
  EXPECT_STATUS(OpenStore("mysql://x"), kBadRequest);
  EXPECT_STATUS(OpenStore("sqlite:"), kBadRequest);
  EXPECT_STATUS(OpenStore(""), kBadRequest);
  auto memory = OpenStore("memory:");
  ASSERT_OK(memory);
  EXPECT_EQ((*memory)->kind(), "memory");
}

TEST(OpenStoreTest, UnreachablePostgresIsUnavailableNotACrash) {
  // Port 1 on loopback: nothing listens there.
  EXPECT_STATUS(OpenStore("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"), kUnavailable);
}

TEST(OpenStoreTest, SqliteInMissingDirectoryIsUnavailable) {
  EXPECT_STATUS(OpenStore("sqlite:/nonexistent-dir/sub/skiff.db"), kUnavailable);
}

}  // namespace
}  // namespace skiff::store
