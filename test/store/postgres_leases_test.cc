// PostgresLeases, the coordinator session cluster ownership runs on: two
// instances registered on one schema claim, renew and give back partitions,
// and an instance whose session ends is dead to the other at once.
#include "store/postgres_leases.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test/store/store_test_util.h"

namespace skiff::store {
namespace {

using std::chrono::milliseconds;

constexpr uint32_t kTestPartitions = 8;
constexpr milliseconds kLease{60000};  // never runs out within a test

class PostgresLeasesTest : public testing::Test {
 protected:
  void SetUp() override { test::OpenOrSkip("postgres", &fixture_); }

  std::unique_ptr<PostgresLeases> Register(const std::string& address) {
    auto leases = PostgresLeases::Register(fixture_->url(), kTestPartitions, address);
    EXPECT_OK(leases);
    return leases.ok() ? std::move(*leases) : nullptr;
  }

  // Partition -> owner (0: none), as PostgreSQL has them.
  std::map<uint32_t, uint64_t> Owners(PostgresLeases& leases) {
    std::map<uint32_t, uint64_t> owners;
    auto rows = leases.Partitions();
    EXPECT_OK(rows);
    if (rows.ok()) {
      for (const PartitionLease& row : *rows) owners[row.partition] = row.owner;
    }
    return owners;
  }

  std::unique_ptr<support::TestStore> fixture_;
};

TEST_F(PostgresLeasesTest, InstancesClaimOnlyWhatNoLiveInstanceHolds) {
  if (!fixture_) return;
  auto a = Register("a:1");
  auto b = Register("b:1");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->id(), 0u);
  EXPECT_NE(a->id(), b->id());
  EXPECT_TRUE(a->intact());

  auto first = a->Claim({0, 1, 2}, kLease);
  ASSERT_OK(first);
  EXPECT_EQ(first->size(), 3u);
  for (const auto& [partition, epoch] : *first) EXPECT_EQ(epoch, 1u) << partition;
  // 1 and 2 are a's, alive and unexpired: only 3 is b's to take.
  auto second = b->Claim({1, 2, 3}, kLease);
  ASSERT_OK(second);
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ(second->front().first, 3u);

  auto renewed = a->Renew(kLease);
  ASSERT_OK(renewed);
  EXPECT_EQ(*renewed, (std::map<uint32_t, uint64_t>{{0, 1}, {1, 1}, {2, 1}}));
  auto rows = a->Partitions();
  ASSERT_OK(rows);
  ASSERT_EQ(rows->size(), kTestPartitions);
  for (const PartitionLease& row : *rows) {
    EXPECT_EQ(row.unexpired, row.partition <= 3) << row.partition;
  }

  ASSERT_OK(a->Beat());
  auto instances = b->Instances(kLease);
  ASSERT_OK(instances);
  ASSERT_EQ(instances->size(), 2u);
  for (const ClusterInstance& instance : *instances) {
    EXPECT_TRUE(instance.alive) << instance.id;
    EXPECT_EQ(instance.address, instance.id == a->id() ? "a:1" : "b:1");
  }

  // Given back, a partition is free for the other, at a new epoch.
  ASSERT_OK(a->Release({1}));
  auto taken = b->Claim({1}, kLease);
  ASSERT_OK(taken);
  EXPECT_EQ(*taken, (std::vector<std::pair<uint32_t, uint64_t>>{{1, 2}}));
}

TEST_F(PostgresLeasesTest, AnInstanceWhoseSessionEndedIsDeadBeforeItsLeaseEnds) {
  if (!fixture_) return;
  auto a = Register("a:1");
  auto b = Register("b:1");
  ASSERT_TRUE(a && b);
  ASSERT_OK(a->Claim({0, 1}, kLease));
  const uint64_t gone = a->id();
  a.reset();  // its lock ends with its session; its leases have not expired

  // The backend lets the lock go when it has seen the socket close.
  auto alive = [&](uint64_t id) {
    auto instances = b->Instances(kLease);
    EXPECT_OK(instances);
    if (!instances.ok()) return false;
    for (const ClusterInstance& instance : *instances) {
      if (instance.id == id) return instance.alive;
    }
    return false;
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (alive(gone) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_FALSE(alive(gone));
  EXPECT_TRUE(alive(b->id()));
  ASSERT_OK(b->ForgetGone());
  auto instances = b->Instances(kLease);
  ASSERT_OK(instances);
  ASSERT_EQ(instances->size(), 1u);
  EXPECT_EQ(instances->front().id, b->id());
  // A dead owner's partitions are claimable before their lease runs out.
  auto taken = b->Claim({0, 1}, kLease);
  ASSERT_OK(taken);
  EXPECT_EQ(taken->size(), 2u);
}

TEST_F(PostgresLeasesTest, GivingEverythingBackLeavesNothingOwned) {
  if (!fixture_) return;
  auto a = Register("a:1");
  ASSERT_TRUE(a);
  ASSERT_OK(a->Claim({0, 1, 2, 3, 4, 5, 6, 7}, kLease));
  auto released = a->ReleaseAll();
  ASSERT_OK(released);
  EXPECT_FALSE(released->empty());
  for (const auto& [partition, owner] : Owners(*a)) EXPECT_EQ(owner, 0u) << partition;
  // No other instance is alive: every one of them has beaten since.
  auto all_beat = a->AllBeatSince(*released, kLease);
  ASSERT_OK(all_beat);
  EXPECT_TRUE(*all_beat);
  ASSERT_OK(a->DatabaseTime());
  ASSERT_OK(a->Unregister());
  auto instances = a->Instances(kLease);
  ASSERT_OK(instances);
  EXPECT_TRUE(instances->empty());
}

TEST_F(PostgresLeasesTest, ALostSessionIsNoLongerIntact) {
  if (!fixture_) return;
  auto a = Register("a:1");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->intact());
  ASSERT_GT(test::KillStoreBackends(*fixture_), 0);
  // A call after the cut finds it (the first may still reach the backend
  // before it has ended); the instance must then register anew.
  Status beat;
  for (int i = 0; i < 100 && (beat = a->Beat()).ok(); ++i) {
  }
  EXPECT_STATUS(beat, kUnavailable);
  EXPECT_FALSE(a->intact());
}

TEST_F(PostgresLeasesTest, ABadUrlIsRefused) {
  if (!fixture_) return;
  EXPECT_STATUS(PostgresLeases::Register("postgres://x/y?call_timeout_ms=soon", 8, "a:1"),
                kBadRequest);
}

}  // namespace
}  // namespace skiff::store
