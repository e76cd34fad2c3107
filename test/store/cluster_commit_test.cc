// CommitSync, the cluster sync commit of a PostgreSQL store: numbered from
// the counter row (raised above the changes a server not in cluster mode
// wrote), the devices' records read under its lock, its statements counted,
// a gap in the numbering refused.
#include <map>
#include <optional>
#include <string>

#include "store/store.h"

#include "test/store/store_test_util.h"

namespace skiff::store {
namespace {

OpenOptions ClusterOpen() {
  OpenOptions o;
  o.cluster = true;
  return o;
}

class ClusterCommitTest : public testing::Test {
 protected:
  void SetUp() override { test::OpenOrSkip("postgres", &fixture_); }
  std::unique_ptr<support::TestStore> fixture_;
};

TEST_F(ClusterCommitTest, NumbersFromTheCounterWhichStartsAboveEveryChange) {
  if (!fixture_) return;
  // Changes a server not in cluster mode wrote: the counter starts above them.
  WriteBatch old;
  old.AppendChange({1, "team", "tasks", "a", "1"});
  old.AppendChange({2, "team", "tasks", "b", "2"});
  old.SetDeviceSeq({"phone", "alice", 2});
  ASSERT_OK(fixture_->store().Write(old));
  fixture_->Close();
  auto a = OpenStore(fixture_->url(), ClusterOpen());
  ASSERT_OK(a);
  const StoreCounters before = (*a)->counters();
  uint64_t seen_counter = 0;
  std::optional<DeviceSeq> seen_phone;
  auto last = (*a)->CommitSync({"phone", "tablet"},
                               [&](uint64_t counter, const auto& devices, WriteBatch* batch) {
                                 seen_counter = counter;
                                 if (auto it = devices.find("phone"); it != devices.end())
                                   seen_phone = it->second;
                                 EXPECT_EQ(devices.count("tablet"), 0u);
                                 batch->AppendChange({counter + 1, "team", "tasks", "c", "3"});
                                 batch->SetDeviceSeq({"phone", "alice", 3});
                               });
  ASSERT_OK(last);
  EXPECT_EQ(seen_counter, 2u);
  EXPECT_EQ(*last, 3u);
  ASSERT_TRUE(seen_phone.has_value());
  EXPECT_EQ(seen_phone->last_seq, 2u);
  // BEGIN, lock, devices, one statement for changes, rows, devices and the
  // counter, COMMIT.
  EXPECT_EQ((*a)->counters().statements - before.statements, 5u);
  EXPECT_EQ((*a)->counters().transactions - before.transactions, 1u);
  ASSERT_OK((*a)->NotifySync(*last));
  EXPECT_EQ((*a)->counters().statements - before.statements, 6u);
  EXPECT_EQ(*(*a)->LastSyncId(), 3u);
  auto since = (*a)->LastSyncIdByGroupSince(2);
  ASSERT_OK(since);
  EXPECT_EQ(*since, (std::map<std::string, uint64_t>{{"team", 3}}));

  // A batch numbered with a gap is refused and nothing lands.
  auto gap = (*a)->CommitSync({"phone"}, [](uint64_t counter, const auto&, WriteBatch* batch) {
    batch->AppendChange({counter + 2, "team", "tasks", "d", "4"});
  });
  EXPECT_STATUS(gap, kInternal);
  EXPECT_EQ(*(*a)->LastSyncId(), 3u);
}

}  // namespace
}  // namespace skiff::store
