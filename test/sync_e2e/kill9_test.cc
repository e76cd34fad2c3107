// skiffd and skiff as processes: kill -9 of the server while a device pushes
// (every acknowledged change is in the store after a restart, and no change
// is applied twice), and groups granted with the admin CLI.
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "client/device.h"
#include "client/sqlite_storage.h"
#include "server/users.h"
#include "store/store.h"
#include "support/skiffd_process.h"

#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using support::RunCommand;

class Kill9Test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "skiff-k9-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    url_ = "sqlite:" + (dir_ / "server.db").string();
  }
  void TearDown() override {
    skiffd_.Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts skiffd on `port` (0: an ephemeral one); false when it did not.
  bool Spawn(uint16_t port = 0) {
    Status started = skiffd_.Start(
        SKIFFD_PATH, {"--store=" + url_, "--port=" + std::to_string(port), "--io-threads", "1"});
    EXPECT_OK(started);
    return started.ok();
  }

  std::filesystem::path dir_;
  std::string url_;
  support::SkiffdProcess skiffd_;
};

TEST_F(Kill9Test, KillingTheServerMidPushLosesNoAcknowledgedChangeAndDuplicatesNone) {
  std::string secret;
  {
    auto store = store::OpenStore(url_);
    ASSERT_OK(store);
    auto created = server::CreateUser(**store, "ann", server::Permissions());
    ASSERT_OK(created);
    secret = *created;
    ASSERT_OK(server::CreateGroup(**store, "team"));
    ASSERT_OK(server::GrantGroup(**store, "ann", "team"));
  }
  ASSERT_TRUE(Spawn());
  const uint16_t port = skiffd_.port();

  auto storage = client::SqliteStorage::Open((dir_ / "device.db").string());
  ASSERT_OK(storage);
  client::DeviceOptions o;
  o.port = port;
  o.user = "ann";
  o.secret = secret;
  o.device_id = "phone";
  o.max_push = 10;  // many small pushes, so the kill lands between and inside them
  o.backoff_min = std::chrono::milliseconds(10);
  o.backoff_max = std::chrono::milliseconds(100);
  auto device = client::Device::Open(o, **storage);
  ASSERT_OK(device);
  constexpr int kWrites = 600;
  for (int i = 0; i < kWrites; ++i) {
    ASSERT_OK((*device)->Put({"team", "t", "k" + std::to_string(i)}, i));
    if (i == kWrites / 2) {
      // Let some pushes be acknowledged, then kill while others are in flight.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while ((*device)->counters().changes_pushed < 50 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ASSERT_GE((*device)->counters().changes_pushed, 50u);
      skiffd_.Kill();
    }
  }
  const uint64_t acked_before_restart = (*device)->counters().changes_pushed;
  ASSERT_LT(acked_before_restart, uint64_t{kWrites}) << "the kill came too late to test anything";
  ASSERT_TRUE(Spawn(port));  // same file, same port: the device reconnects
  ASSERT_OK((*device)->WaitUntilSynced(std::chrono::seconds(30))) << (*device)->last_error();
  EXPECT_EQ((*device)->outbox_size(), 0u);
  (*device)->Close();
  skiffd_.Kill();

  auto store = store::OpenStore(url_);
  ASSERT_OK(store);
  auto changes = (*store)->ReadChanges(0, {"team"}, store::kMaxScanLimit);
  ASSERT_OK(changes);
  // Each write exactly once, in the order the device made them.
  ASSERT_EQ(changes->size(), size_t{kWrites});
  std::set<std::string> keys;
  for (size_t i = 0; i < changes->size(); ++i) {
    EXPECT_EQ((*changes)[i].key, "k" + std::to_string(i));
    EXPECT_EQ((*changes)[i].value, std::to_string(i));
    keys.insert((*changes)[i].key);
  }
  EXPECT_EQ(keys.size(), size_t{kWrites});
  auto device_seq = (*store)->GetDevice("phone");
  ASSERT_OK(device_seq);
  ASSERT_TRUE(device_seq->has_value());
  EXPECT_EQ((*device_seq)->last_seq, uint64_t{kWrites});
}

TEST_F(Kill9Test, GroupsGrantedWithTheAdminCliDecideWhatADeviceSees) {
  std::string secret;
  {
    auto store = store::OpenStore(url_);
    ASSERT_OK(store);
    auto created = server::CreateUser(**store, "ann", server::Permissions());
    ASSERT_OK(created);
    secret = *created;
  }
  EXPECT_EQ(RunCommand({SKIFF_PATH, "--store", url_, "group", "add", "team"}), 0);
  EXPECT_NE(RunCommand({SKIFF_PATH, "--store", url_, "group", "add", "team"}), 0);  // exists
  EXPECT_NE(RunCommand({SKIFF_PATH, "--store", url_, "group", "grant", "ann", "nope"}), 0);
  EXPECT_NE(RunCommand({SKIFF_PATH, "--store", url_, "group", "grant", "nobody", "team"}), 0);
  EXPECT_EQ(RunCommand({SKIFF_PATH, "--store", url_, "group", "grant", "ann", "team"}), 0);
  {
    auto store = store::OpenStore(url_);
    ASSERT_OK(store);
    auto groups = server::UserGroups(**store, "ann");
    ASSERT_OK(groups);
    EXPECT_EQ(*groups, std::vector<std::string>{"team"});
  }
  ASSERT_TRUE(Spawn());
  const uint16_t port = skiffd_.port();
  auto storage = client::SqliteStorage::Open((dir_ / "device.db").string());
  ASSERT_OK(storage);
  client::DeviceOptions o;
  o.port = port;
  o.user = "ann";
  o.secret = secret;
  o.device_id = "phone";
  auto device = client::Device::Open(o, **storage);
  ASSERT_OK(device);
  ASSERT_OK((*device)->Put({"team", "t", "a"}, 1));
  ASSERT_OK((*device)->Put({"elsewhere", "t", "b"}, 2));
  ASSERT_OK((*device)->WaitUntilSynced(std::chrono::seconds(20))) << (*device)->last_error();
  EXPECT_EQ((*device)->counters().rejected, 1u);  // not in "elsewhere"
  EXPECT_EQ((*device)->counters().changes_pushed, 1u);
}

}  // namespace
}  // namespace skiff::testing
