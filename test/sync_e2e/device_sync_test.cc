// Devices over the real server and WebSocket: convergence after concurrent
// offline edits, group isolation, storages that persist and reload.
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "client/device.h"
#include "client/lmdb_storage.h"
#include "client/memory_storage.h"
#include "client/sqlite_storage.h"

#include "test/status_matchers.h"
#include "test/sync_e2e/sync_fixture.h"

namespace skiff::testing {
namespace {

using client::Device;
using client::RowName;
using std::chrono::seconds;

constexpr auto kSyncTimeout = seconds(20);

std::unique_ptr<Device> OpenDevice(const client::DeviceOptions& o, client::DeviceStorage& s) {
  auto device = Device::Open(o, s);
  EXPECT_OK(device);
  if (!device.ok()) std::abort();
  return std::move(*device);
}

// Rows "k1001".."k<1000+n>" of table "t" in group "team", value {"i": i},
// pushed by a device "loader" of the client's user.
Status PushRows(client::Client& client, int n) {
  std::vector<client::SyncChange> changes;
  for (int i = 1; i <= n; ++i) {
    std::string key = "k";  // appended: g++ 12 -O3 warns falsely on "k" + std::string
    key += std::to_string(1000 + i);
    changes.push_back(
        {static_cast<uint64_t>(i), {"team", "t", key}, doc::Dump(doc::Value{{"i", i}})});
  }
  return client.Push({"loader", changes}).status();
}

class DeviceSyncTest : public SyncFixture {
 protected:
  // ann, in "team", with PushRows(rows) done; the options of a new device
  // of hers that bootstraps in pages of 100.
  Result<client::DeviceOptions> PagedReaderOf(int rows) {
    AddUser("ann", {"team"});
    SKIFF_RETURN_IF_ERROR(PushRows(ClientFor("ann"), rows));
    client::DeviceOptions o = DeviceFor("ann", "reader");
    o.page = 100;
    return o;
  }
};

// The device holds exactly the rows PushRows(n) wrote, in key order.
void ExpectPushedRows(Device& device, int n) {
  std::vector<client::StoredRow> rows = device.Scan("team", "t");
  ASSERT_EQ(rows.size(), size_t(n));
  for (int i = 1; i <= n; ++i) {
    EXPECT_EQ(rows[i - 1].name.key, "k" + std::to_string(1000 + i));
    EXPECT_EQ(rows[i - 1].value, doc::Value({{"i", i}}).dump());
  }
}

TEST_F(DeviceSyncTest, TwoDevicesOfOneUserConvergeAfterConcurrentOfflineEdits) {
  AddUser("ann", {"team"});
  client::MemoryStorage phone_storage, laptop_storage;
  {
    // Offline: both edit the same row and rows of their own.
    client::DeviceOptions offline = DeviceFor("ann", "phone");
    offline.sync = false;
    auto phone = OpenDevice(offline, phone_storage);
    offline.device_id = "laptop";
    auto laptop = OpenDevice(offline, laptop_storage);
    for (int i = 0; i < 20; ++i) {
      ASSERT_OK(phone->Put({"team", "tasks", "shared"}, {{"by", "phone"}, {"n", i}}));
      ASSERT_OK(laptop->Put({"team", "tasks", "shared"}, {{"by", "laptop"}, {"n", i}}));
      ASSERT_OK(phone->Put({"team", "tasks", "p" + std::to_string(i)}, i));
      ASSERT_OK(laptop->Put({"team", "tasks", "l" + std::to_string(i)}, i));
    }
    ASSERT_OK(phone->Delete({"team", "tasks", "p3"}));
    EXPECT_EQ(phone->outbox_size(), 41u);
    EXPECT_EQ(phone->state(), client::SyncState::kOffline);
  }
  // Online again, at the same time.
  auto phone = OpenDevice(DeviceFor("ann", "phone"), phone_storage);
  auto laptop = OpenDevice(DeviceFor("ann", "laptop"), laptop_storage);
  ASSERT_OK(phone->WaitUntilSynced(kSyncTimeout)) << phone->last_error();
  ASSERT_OK(laptop->WaitUntilSynced(kSyncTimeout)) << laptop->last_error();
  ASSERT_OK(phone->WaitUntilSynced(kSyncTimeout)) << phone->last_error();

  EXPECT_EQ(phone->outbox_size(), 0u);
  EXPECT_EQ(laptop->outbox_size(), 0u);
  // A wait woken by the laptop's last push may have the phone in a round
  // right now (kSyncing); with nothing left to exchange it settles online.
  const auto deadline = std::chrono::steady_clock::now() + kSyncTimeout;
  while (phone->state() != client::SyncState::kOnline &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(phone->state(), client::SyncState::kOnline);
  auto a = phone->Scan("team", "tasks");
  auto b = laptop->Scan("team", "tasks");
  ASSERT_EQ(a.size(), 40u);  // shared + 19 p + 20 l
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].value, b[i].value) << a[i].name.key;
  }
  EXPECT_FALSE(phone->Get({"team", "tasks", "p3"}).has_value());
  // The server's order decided "shared": one of the two last writes won.
  std::string shared = *phone->Get({"team", "tasks", "shared"});
  EXPECT_TRUE(shared == R"({"by":"phone","n":19})" || shared == R"({"by":"laptop","n":19})")
      << shared;
}

TEST_F(DeviceSyncTest, ADeviceOfAnotherGroupNeverSeesItsRows) {
  AddUser("ann", {"team"});
  AddUser("bob", {"other"});
  client::MemoryStorage ann_storage, bob_storage;
  auto ann = OpenDevice(DeviceFor("ann", "ann-phone"), ann_storage);
  auto bob = OpenDevice(DeviceFor("bob", "bob-phone"), bob_storage);
  ASSERT_OK(ann->Put({"team", "tasks", "secret"}, "for the team"));
  ASSERT_OK(bob->Put({"other", "tasks", "mine"}, "for other"));
  // Bob also tries to write into a group he is not in: refused for good.
  ASSERT_OK(bob->Put({"team", "tasks", "intrusion"}, "no"));
  ASSERT_OK(ann->WaitUntilSynced(kSyncTimeout)) << ann->last_error();
  ASSERT_OK(bob->WaitUntilSynced(kSyncTimeout)) << bob->last_error();
  ASSERT_OK(ann->WaitUntilSynced(kSyncTimeout)) << ann->last_error();

  EXPECT_FALSE(bob->Get({"team", "tasks", "secret"}).has_value());
  EXPECT_EQ(bob->counters().rejected, 1u);
  EXPECT_EQ(bob->outbox_size(), 0u);
  EXPECT_FALSE(ann->Get({"other", "tasks", "mine"}).has_value());
  EXPECT_FALSE(ann->Get({"team", "tasks", "intrusion"}).has_value());
  EXPECT_EQ(ann->Scan("team", "tasks").size(), 1u);

  // A new device of bob's bootstraps: still nothing of "team".
  client::MemoryStorage fresh;
  auto bob2 = OpenDevice(DeviceFor("bob", "bob-laptop"), fresh);
  ASSERT_OK(bob2->WaitUntilSynced(kSyncTimeout)) << bob2->last_error();
  EXPECT_EQ(bob2->row_count(), 1u);
  EXPECT_TRUE(bob2->Get({"other", "tasks", "mine"}).has_value());
}

TEST_F(DeviceSyncTest, ANewDeviceBootstrapsInPagesThenPulls) {
  Result<client::DeviceOptions> o = PagedReaderOf(250);
  ASSERT_OK(o);
  client::MemoryStorage storage;
  auto reader = OpenDevice(*o, storage);
  ASSERT_OK(reader->WaitUntilUpToDate(kSyncTimeout)) << reader->last_error();
  EXPECT_EQ(reader->row_count(), 250u);
  client::DeviceCounters c = reader->synced_counters();
  EXPECT_EQ(c.bootstraps, 3u);  // 100 + 100 + 50
  EXPECT_EQ(c.rows_received, 250u);
  EXPECT_EQ(c.pulls, 1u);
  EXPECT_EQ(c.pushes, 0u);
  EXPECT_EQ(reader->cursor(), 250u);
  // Every row once, in key order, with the value pushed.
  ExpectPushedRows(*reader, 250);
}

// A MemoryStorage under a storage that changes how remote rows are applied.
class OverMemoryStorage : public client::DeviceStorage {
 public:
  Result<client::StoredState> Load() override { return inner_.Load(); }
  Status WriteLocal(const client::OutboxEntry& entry) override { return inner_.WriteLocal(entry); }
  Status Acknowledge(uint64_t last_seq) override { return inner_.Acknowledge(last_seq); }
  uint64_t statements() const override { return 0; }

 protected:
  client::MemoryStorage inner_;
};

// A MemoryStorage whose second page of remote rows fails to apply once, the
// way a full disk or a crash between two pages would leave a bootstrap
// half done. It records the first key of every page it was handed.
class FailSecondPage : public OverMemoryStorage {
 public:
  Status ApplyRemote(const std::vector<client::RowWrite>& rows,
                     const client::SyncPosition& position) override {
    if (!rows.empty()) first_keys.push_back(rows.front().name.key);
    if (++pages == 2) return Internal("injected: the page did not land");
    return inner_.ApplyRemote(rows, position);
  }

  int pages = 0;  // read once the device is up to date (its loop is idle)
  std::vector<std::string> first_keys;
};

TEST_F(DeviceSyncTest, ABootstrapCutBetweenPagesResumesAfterTheLastPageStored) {
  Result<client::DeviceOptions> o = PagedReaderOf(250);
  ASSERT_OK(o);
  FailSecondPage storage;
  auto reader = OpenDevice(*o, storage);
  ASSERT_OK(reader->WaitUntilUpToDate(kSyncTimeout)) << reader->last_error();
  // The failed page was fetched again, not the whole download.
  EXPECT_EQ(storage.first_keys, (std::vector<std::string>{"k1001", "k1101", "k1101", "k1201"}));
  // Three pages, the failed one again, and the third twice: it was asked
  // for ahead, while the second was being applied, and that reply is dropped
  // with the failure.
  EXPECT_EQ(reader->synced_counters().bootstraps, 5u);
  ExpectPushedRows(*reader, 250);
  EXPECT_EQ(reader->cursor(), 250u);
}

// A MemoryStorage that holds the device's thread in applying its first page
// of remote rows until the test lets it go (or a minute passes).
class HoldFirstPage : public OverMemoryStorage {
 public:
  Status ApplyRemote(const std::vector<client::RowWrite>& rows,
                     const client::SyncPosition& position) override {
    if (!rows.empty() && !held_) {
      held_ = true;
      released_.wait_for(std::chrono::minutes(1));
    }
    return inner_.ApplyRemote(rows, position);
  }
  void Release() { release_.set_value(); }

 private:
  bool held_ = false;  // the device's thread only
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
};

double PagesFromReadAhead(client::Client& client) {
  auto stats = client.CallSync({{"op", "stats"}});
  EXPECT_OK(stats);
  return stats.ok() ? (*stats)["sync"].value("pages_from_read_ahead", -1.0) : -1.0;
}

TEST_F(DeviceSyncTest, ABootstrapHeldInAPageGoesOnWithEveryPageOnce) {
  Result<client::DeviceOptions> o = PagedReaderOf(450);
  ASSERT_OK(o);
  HoldFirstPage storage;
  auto reader = OpenDevice(*o, storage);
  struct ReleaseAtEnd {
    HoldFirstPage& storage;
    bool released = false;
    ~ReleaseAtEnd() {
      if (!released) storage.Release();
    }
  } release{storage};
  // The device's thread is held in the first page. The client's I/O thread
  // asked for the second as it read the first reply (nothing waited for the
  // device then), and the server answers it from the page it read ahead.
  // Whether the third is asked for too depends on whether the device's
  // thread had taken the first page when the second arrived, so only the
  // second is certain here.
  const auto deadline = std::chrono::steady_clock::now() + kSyncTimeout;
  while (PagesFromReadAhead(ClientFor("ann")) < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(PagesFromReadAhead(ClientFor("ann")), 1);
  release.released = true;
  storage.Release();
  ASSERT_OK(reader->WaitUntilUpToDate(kSyncTimeout)) << reader->last_error();
  // Five pages (4 x 100 + 50), each asked for once and in order, whichever
  // thread asked, so each after the first came from the read-ahead.
  EXPECT_EQ(reader->synced_counters().bootstraps, 5u);
  EXPECT_EQ(PagesFromReadAhead(ClientFor("ann")), 4);
  ExpectPushedRows(*reader, 450);
}

TEST_F(DeviceSyncTest, RepeatedSyncRequestsKeepOneWaitInFlight) {
  AddUser("ann", {"team"});
  client::MemoryStorage storage;
  auto device = OpenDevice(DeviceFor("ann", "phone"), storage);
  // Each call interrupts the held wait; more than the server's 16 held
  // waits per connection would fail if each left one behind.
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK(device->WaitUntilSynced(kSyncTimeout)) << i << ": " << device->last_error();
  }
  EXPECT_LE(device->counters().waits, 2u);
  // The wait still held answers a change from elsewhere.
  client::Client& raw = ClientFor("ann");
  const client::SyncChange change{1, {"team", "t", "k"}, "\"from elsewhere\""};
  ASSERT_OK(raw.Push({"other", {&change, 1}}));
  for (int i = 0; i < 200 && !device->Get({"team", "t", "k"}); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(device->Get({"team", "t", "k"}), "\"from elsewhere\"");
}

class StoragePersistence : public ::testing::TestWithParam<std::string> {};

TEST_P(StoragePersistence, RowsOutboxAndCursorSurviveReopen) {
  std::string dir = (std::filesystem::temp_directory_path() / "skiff-device-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/device.db";
  client::MemoryStorage memory;
  auto open_storage = [&]() -> std::unique_ptr<client::DeviceStorage> {
    if (GetParam() == "memory") return nullptr;
    if (GetParam() == "lmdb") {
      auto s = client::LmdbStorage::Open(path);
      EXPECT_OK(s);
      return s.ok() ? std::move(*s) : nullptr;
    }
    auto s = client::SqliteStorage::Open(path);
    EXPECT_OK(s);
    return s.ok() ? std::move(*s) : nullptr;
  };
  client::DeviceOptions o;
  o.sync = false;
  {
    auto owned = open_storage();
    client::DeviceStorage& storage = owned ? *owned : memory;
    auto device = OpenDevice(o, storage);
    ASSERT_OK(device->Put({"g", "t", "a"}, {{"v", 1}}));
    ASSERT_OK(device->Put({"g", "t", "b"}, "two"));
    ASSERT_OK(device->Delete({"g", "t", "a"}));
    ASSERT_OK(device->Put({"g", "u", "c"}, 3));
    EXPECT_EQ(device->Put({"bad group", "t", "x"}, 1).code(), StatusCode::kBadRequest);
    ASSERT_OK(storage.ApplyRemote({{{"g", "t", "z"}, "\"server\""}}, {7, true, {}, 7}));
  }
  auto owned = open_storage();
  client::DeviceStorage& storage = owned ? *owned : memory;
  const uint64_t before = storage.statements();
  auto device = OpenDevice(o, storage);
  if (GetParam() == "sqlite") {
    EXPECT_EQ(storage.statements() - before, 3u);
  }
  if (GetParam() == "lmdb") {
    // One cursor step per key: the meta, 4 outbox entries, 3 rows, the end.
    EXPECT_EQ(storage.statements() - before, 9u);
  }
  EXPECT_FALSE(device->Get({"g", "t", "a"}).has_value());
  EXPECT_EQ(device->Get({"g", "t", "b"}), "\"two\"");
  EXPECT_EQ(device->Get({"g", "u", "c"}), "3");
  EXPECT_EQ(device->Get({"g", "t", "z"}), "\"server\"");
  EXPECT_EQ(device->outbox_size(), 4u);
  EXPECT_EQ(device->cursor(), 7u);
  // Sequence numbers continue after the stored ones even once acknowledged.
  ASSERT_OK(storage.Acknowledge(4));
  device.reset();
  device = OpenDevice(o, storage);
  EXPECT_EQ(device->outbox_size(), 0u);
  ASSERT_OK(device->Put({"g", "t", "d"}, 4));
  device.reset();
  auto state = storage.Load();
  ASSERT_OK(state);
  ASSERT_EQ(state->outbox.size(), 1u);
  EXPECT_EQ(state->outbox[0].seq, 5u);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

INSTANTIATE_TEST_SUITE_P(Storages, StoragePersistence,
                         ::testing::Values("memory", "sqlite", "lmdb"));

}  // namespace
}  // namespace skiff::testing
