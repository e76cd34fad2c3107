// A Device on each storage (memory, SQLite, LMDB) against the real server
// over WebSocket: it bootstraps in pages, pushes its own writes, pulls
// another device's, and a reopened device finds it all on its storage.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/device.h"
#include "client/memory_storage.h"
#include "doc/document.h"

#include "test/client/storage_under_test.h"
#include "test/status_matchers.h"
#include "test/sync_e2e/sync_fixture.h"

namespace skiff::testing {
namespace {

using client::Device;
using client::RowName;

constexpr auto kSyncTimeout = std::chrono::seconds(20);

class DeviceOnStorageTest : public SyncFixture, public ::testing::WithParamInterface<std::string> {
 protected:
  // A device on `storage`; fails the test (nullptr) when it does not open.
  std::unique_ptr<Device> Open(const client::DeviceOptions& o, client::DeviceStorage& storage) {
    auto device = Device::Open(o, storage);
    EXPECT_OK(device);
    return device.ok() ? std::move(*device) : nullptr;
  }
};

TEST_P(DeviceOnStorageTest, BootstrapsSyncsBothWaysAndReopens) {
  AddUser("ann", {"team"});
  // 250 rows on the server before the device exists.
  std::vector<client::SyncChange> changes;
  for (int i = 0; i < 250; ++i) {
    changes.push_back({static_cast<uint64_t>(i + 1),
                       {"team", "t", "k" + std::to_string(1000 + i)},
                       doc::Dump(doc::Value{{"i", i}})});
  }
  ASSERT_OK(ClientFor("ann").Push({"loader", changes}));

  StorageUnderTest storage(GetParam());
  ASSERT_OK(storage.Reopen());
  client::DeviceOptions o = DeviceFor("ann", "phone");
  o.page = 100;
  uint64_t cursor = 0;
  {
    auto phone = Open(o, storage.get());
    ASSERT_NE(phone, nullptr);
    ASSERT_OK(phone->WaitUntilUpToDate(kSyncTimeout)) << phone->last_error();
    EXPECT_EQ(phone->row_count(), 250u);
    EXPECT_EQ(phone->synced_counters().bootstraps, 3u);  // 100 + 100 + 50

    // Its writes reach another device, and that device's reach it.
    ASSERT_OK(phone->Put({"team", "t", "from-phone"}, {{"by", "phone"}}));
    ASSERT_OK(phone->Delete({"team", "t", "k1000"}));
    ASSERT_OK(phone->WaitUntilSynced(kSyncTimeout)) << phone->last_error();
    client::MemoryStorage laptop_storage;
    auto laptop = Open(DeviceFor("ann", "laptop"), laptop_storage);
    ASSERT_NE(laptop, nullptr);
    ASSERT_OK(laptop->WaitUntilUpToDate(kSyncTimeout)) << laptop->last_error();
    EXPECT_EQ(laptop->Get({"team", "t", "from-phone"}), R"({"by":"phone"})");
    EXPECT_FALSE(laptop->Get({"team", "t", "k1000"}).has_value());
    ASSERT_OK(laptop->Put({"team", "t", "from-laptop"}, 7));
    ASSERT_OK(laptop->WaitUntilSynced(kSyncTimeout)) << laptop->last_error();
    ASSERT_OK(phone->WaitUntilSynced(kSyncTimeout)) << phone->last_error();
    EXPECT_EQ(phone->Get({"team", "t", "from-laptop"}), "7");
    EXPECT_EQ(phone->outbox_size(), 0u);
    cursor = phone->cursor();
    EXPECT_GT(cursor, 250u);
  }

  // Reopened offline: everything came back from the storage alone.
  ASSERT_OK(storage.Reopen());
  client::DeviceOptions offline = o;
  offline.sync = false;
  auto phone = Open(offline, storage.get());
  ASSERT_NE(phone, nullptr);
  EXPECT_EQ(phone->row_count(), 251u);  // 250 - k1000 + from-phone + from-laptop
  EXPECT_EQ(phone->Get({"team", "t", "from-laptop"}), "7");
  EXPECT_EQ(phone->Get({"team", "t", "k1249"}), R"({"i":249})");
  EXPECT_FALSE(phone->Get({"team", "t", "k1000"}).has_value());
  EXPECT_EQ(phone->outbox_size(), 0u);
  EXPECT_EQ(phone->cursor(), cursor);
  std::vector<client::StoredRow> rows = phone->Scan("team", "t");
  ASSERT_EQ(rows.size(), 251u);
  EXPECT_EQ(rows.front().name.key, "from-laptop");  // key order: "f" < "k"
}

INSTANTIATE_TEST_SUITE_P(Storages, DeviceOnStorageTest, ::testing::ValuesIn(StorageKinds()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace skiff::testing
