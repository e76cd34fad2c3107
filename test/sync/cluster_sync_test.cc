// Sync across cluster instances: three sync engines, each on its own
// PostgreSQL store opened in cluster mode on one schema, in one process, as
// three skiffd would run. Ids stay 1..N in commit order whichever engine
// commits, a push retried through another engine applies nothing, a push
// through one engine wakes exactly its group's waits held on another (by
// NOTIFY, or by the poll when notifications are off), and a cursor one
// engine handed out is accepted by the others.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "sync/cluster_sync_log.h"
#include "sync/sync_engine.h"

#include "test/store/store_test_util.h"

namespace skiff::sync {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

Caller MakeCaller(std::string user, std::vector<std::string> groups) {
  return Caller{std::move(user), std::make_shared<const std::vector<std::string>>(groups)};
}

PushChange Row(uint64_t seq, std::string key, std::string group, std::string value) {
  return PushChange{seq, "tasks", std::move(key), std::move(group), std::move(value)};
}

// A cluster instance's engine, as skiffd builds it: the cluster's sync log
// on `store`, then the engine over it.
Result<std::unique_ptr<SyncEngine>> StartClustered(store::Store& store, const Clock& clock,
                                                   SyncOptions options,
                                                   ClusterSyncLogOptions log_options) {
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<SyncLog> log,
                         ClusterSyncLog::Open(store, std::move(log_options)));
  return SyncEngine::Start(store, clock, options, std::move(log));
}

// Counts answered waits; Await blocks until `n` are in or a generous
// deadline passes (a loaded machine is slow, never wrong).
class Answers {
 public:
  void Add(bool changed) {
    std::lock_guard<std::mutex> lock(mu_);
    (changed ? changed_ : unchanged_)++;
    last_ = Steady::now();
    cv_.notify_all();
  }
  bool Await(int n, std::chrono::seconds deadline = 60s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, deadline, [&] { return changed_ + unchanged_ >= n; });
  }
  int changed() {
    std::lock_guard<std::mutex> lock(mu_);
    return changed_;
  }
  int unchanged() {
    std::lock_guard<std::mutex> lock(mu_);
    return unchanged_;
  }
  Steady::time_point last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int changed_ = 0;
  int unchanged_ = 0;
  Steady::time_point last_;
};

class ClusterSyncTest : public testing::Test {
 protected:
  static constexpr int kEngines = 3;

  void SetUp() override {
    test::OpenOrSkip("postgres", &fixture_);
    if (!fixture_) return;
    // The fixture made the schema; its exclusive store would keep cluster
    // instances out.
    fixture_->Close();
  }

  // Opens kEngines cluster stores and engines; `notify` and `poll` for each.
  void StartCluster(std::vector<bool> notify = {true, true, true},
                    std::chrono::milliseconds poll = 1000ms) {
    for (int i = 0; i < kEngines; ++i) {
      store::OpenOptions open;
      open.cluster = true;
      auto store = store::OpenStore(fixture_->url(), open);
      ASSERT_OK(store);
      stores_.push_back(std::move(*store));
      SyncOptions options;
      options.expiry_thread = false;  // the manual clock stands still: held waits never time out
      ClusterSyncLogOptions log_options;
      log_options.store_url = fixture_->url();
      log_options.notify = notify[i];
      log_options.poll_interval = poll;
      auto engine = StartClustered(*stores_.back(), clock_, options, log_options);
      ASSERT_OK(engine);
      engines_.push_back(std::move(*engine));
    }
  }

  void TearDown() override {
    engines_.clear();
    stores_.clear();
  }

  Result<PushReply> PushNow(SyncEngine& engine, const Caller& caller, std::string device,
                            std::vector<PushChange> changes) {
    std::promise<Result<PushReply>> done;
    auto future = done.get_future();
    engine.Push(caller, PushRequest{std::move(device), std::move(changes)},
                [&](Result<PushReply> r) { done.set_value(std::move(r)); });
    return future.get();
  }

  // Every change in the log, read through any store.
  std::vector<store::Change> AllChanges(const std::vector<std::string>& groups) {
    std::vector<store::Change> out;
    uint64_t after = 0;
    for (;;) {
      auto page = stores_[0]->ReadChanges(after, groups, store::kMaxScanLimit);
      EXPECT_OK(page);
      if (!page.ok() || page->empty()) return out;
      after = page->back().sync_id;
      out.insert(out.end(), page->begin(), page->end());
    }
  }

  // Holds 100 waits in each of 10 groups on engine 0, pushes to one group
  // through engine 1 and checks that exactly that group's waits are woken.
  // Returns the time from sending the push to the last wake.
  Steady::duration HoldThousandWaitsAndPushOneGroup() {
    constexpr int kGroups = 10, kPerGroup = 100;
    const uint64_t since = engines_[0]->cursor();
    for (int g = 0; g < kGroups; ++g) {
      const Caller caller = MakeCaller("u" + std::to_string(g), {"g" + std::to_string(g)});
      for (int i = 0; i < kPerGroup; ++i) {
        engines_[0]->Wait(caller, since, 60s,
                          [this](Result<WaitReply> r) { answers_.Add(r.ok() && r->changed); });
      }
    }
    EXPECT_EQ(engines_[0]->counters().waits_held, uint64_t(kGroups) * kPerGroup);
    const auto sent = Steady::now();
    auto pushed =
        PushNow(*engines_[1], MakeCaller("u3", {"g3"}), "u3-phone", {Row(1, "k", "g3", "1")});
    EXPECT_OK(pushed);
    EXPECT_TRUE(answers_.Await(kPerGroup)) << "the push through engine 1 woke no wait on engine 0";
    const auto latency = answers_.last() - sent;
    EXPECT_EQ(answers_.changed(), kPerGroup);
    EXPECT_EQ(answers_.unchanged(), 0);
    // The other groups' waits stay held: a commit of any group never wakes
    // them, and a catch-up wakes only the groups it found moved.
    EXPECT_EQ(engines_[0]->counters().waits_held, uint64_t(kGroups - 1) * kPerGroup);
    EXPECT_EQ(engines_[0]->counters().waits_woken, uint64_t(kPerGroup));
    return latency;
  }

  ManualClock clock_;
  Answers answers_;  // outlives the engines, whose Stop answers held waits
  std::unique_ptr<support::TestStore> fixture_;
  std::vector<std::unique_ptr<store::Store>> stores_;  // outlive the engines
  std::vector<std::unique_ptr<SyncEngine>> engines_;
  const Caller alice_ = MakeCaller("alice", {"team"});
};

TEST(ClusterModeEngineTest, NeedsPostgreSQL) {
  ManualClock clock;
  auto store = store::NewMemoryStore();
  ClusterSyncLogOptions log_options;
  log_options.store_url = "memory:";
  auto engine = StartClustered(*store, clock, SyncOptions(), log_options);
  EXPECT_STATUS(engine, kBadRequest);
  EXPECT_NE(engine.status().message().find("cluster mode needs PostgreSQL"), std::string::npos)
      << engine.status().message();
}

TEST_F(ClusterSyncTest, ConcurrentPushesThroughAllEnginesNumberOneToNAndApplyEachSeqOnce) {
  if (!fixture_) return;
  StartCluster();
  if (HasFatalFailure()) return;
  // Each device pushes its outbox through the engines in turn, so every
  // engine sees devices another engine pushed for a moment before.
  constexpr int kDevices = 6, kPushes = 40, kPerPush = 3;
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int d = 0; d < kDevices; ++d) {
    threads.emplace_back([&, d] {
      const std::string device = "dev" + std::to_string(d);
      for (int p = 0; p < kPushes; ++p) {
        std::vector<PushChange> changes;
        for (int c = 1; c <= kPerPush; ++c) {
          const uint64_t seq = uint64_t(p) * kPerPush + c;
          changes.push_back(Row(seq, device + "/" + std::to_string(seq), "team", "1"));
        }
        auto r = PushNow(*engines_[(d + p) % kEngines], alice_, device, changes);
        if (!r.ok() || r->applied != kPerPush) ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failed.load(), 0);

  const std::vector<store::Change> log = AllChanges({"team"});
  const uint64_t n = uint64_t(kDevices) * kPushes * kPerPush;
  ASSERT_EQ(log.size(), n);
  std::set<std::string> keys;
  for (uint64_t i = 0; i < n; ++i) {
    EXPECT_EQ(log[i].sync_id, i + 1) << "ids are 1..N with no gap";
    keys.insert(log[i].key);
  }
  EXPECT_EQ(keys.size(), n) << "every (device, seq) stored once";
  for (int d = 0; d < kDevices; ++d) {
    auto record = stores_[1]->GetDevice("dev" + std::to_string(d));
    ASSERT_OK(record);
    ASSERT_TRUE(record->has_value());
    EXPECT_EQ((*record)->last_seq, uint64_t(kPushes) * kPerPush);
  }
  uint64_t commits = 0;
  for (auto& engine : engines_) commits += engine->counters().commits;
  std::printf("%llu pushes of %d changes through %d engines: %llu commits\n",
              static_cast<unsigned long long>(kDevices * kPushes), kPerPush, kEngines,
              static_cast<unsigned long long>(commits));
}

TEST_F(ClusterSyncTest, APushRetriedThroughAnotherEngineAppliesNothing) {
  if (!fixture_) return;
  StartCluster();
  if (HasFatalFailure()) return;
  const std::vector<PushChange> outbox = {Row(1, "a", "team", "1"), Row(2, "b", "team", "2")};
  auto first = PushNow(*engines_[0], alice_, "phone", outbox);
  ASSERT_OK(first);
  EXPECT_EQ(first->applied, 2u);
  auto retried = PushNow(*engines_[1], alice_, "phone", outbox);
  ASSERT_OK(retried);
  EXPECT_EQ(retried->applied, 0u);
  EXPECT_EQ(retried->last_seq, 2u);
  auto mixed =
      PushNow(*engines_[2], alice_, "phone", {Row(2, "b", "team", "2"), Row(3, "c", "team", "3")});
  ASSERT_OK(mixed);
  EXPECT_EQ(mixed->applied, 1u);
  const std::vector<store::Change> log = AllChanges({"team"});
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[2].sync_id, 3u);
  EXPECT_EQ(log[2].key, "c");
  // The device's owner holds on every engine: another user is refused.
  EXPECT_STATUS(
      PushNow(*engines_[1], MakeCaller("bob", {"team"}), "phone", {Row(4, "d", "team", "4")}),
      kForbidden);
}

TEST_F(ClusterSyncTest, APushThroughOneEngineWakesExactlyItsGroupsWaitsOnAnother) {
  if (!fixture_) return;
  // A poll of an hour: only the notification can wake them in time.
  StartCluster({true, true, true}, 3600s);
  if (HasFatalFailure()) return;
  const auto latency = HoldThousandWaitsAndPushOneGroup();
  std::printf("wake on another engine by NOTIFY: %.1f ms after the push was sent\n",
              std::chrono::duration<double, std::milli>(latency).count());
  engines_[0]->Stop();  // answers_ the held ones: not changed
  EXPECT_TRUE(answers_.Await(1000));
  EXPECT_EQ(answers_.unchanged(), 900);
}

TEST_F(ClusterSyncTest, WithNotificationsOffThePollWakesThem) {
  if (!fixture_) return;
  // Engine 1 sends no NOTIFY: engine 0 learns of its commit by its poll.
  StartCluster({true, false, true}, 300ms);
  if (HasFatalFailure()) return;
  const uint64_t catch_ups = engines_[0]->counters().catch_ups;
  const auto latency = HoldThousandWaitsAndPushOneGroup();
  EXPECT_GT(engines_[0]->counters().catch_ups, catch_ups);
  std::printf("wake on another engine by the 300 ms poll: %.1f ms after the push was sent\n",
              std::chrono::duration<double, std::milli>(latency).count());
}

TEST_F(ClusterSyncTest, ACursorFromOneEngineIsAcceptedByAnother) {
  if (!fixture_) return;
  // Engine 1 does not notify and engine 0 polls hourly: engine 0 is behind
  // when the cursor reaches it.
  StartCluster({true, false, true}, 3600s);
  if (HasFatalFailure()) return;
  auto pushed =
      PushNow(*engines_[1], alice_, "phone", {Row(1, "a", "team", "1"), Row(2, "b", "team", "2")});
  ASSERT_OK(pushed);
  ASSERT_EQ(pushed->cursor, 2u);
  EXPECT_EQ(engines_[0]->cursor(), 0u) << "engine 0 should not have heard of it yet";

  auto pulled = engines_[0]->Pull(alice_, pushed->cursor, 100);
  ASSERT_OK(pulled);
  EXPECT_TRUE(pulled->changes.empty());
  EXPECT_EQ(pulled->cursor, 2u);
  EXPECT_EQ(engines_[0]->cursor(), 2u);
  auto from_start = engines_[0]->Pull(alice_, 0, 100);
  ASSERT_OK(from_start);
  ASSERT_EQ(from_start->changes.size(), 2u);

  // A wait with a cursor from engine 1 is held on engine 2, not refused.
  auto more = PushNow(*engines_[1], alice_, "phone", {Row(3, "c", "team", "3")});
  ASSERT_OK(more);
  engines_[2]->Wait(alice_, more->cursor, 60s,
                    [this](Result<WaitReply> r) { answers_.Add(r.ok() && !r->changed); });
  EXPECT_EQ(engines_[2]->counters().waits_held, 1u);
  // A cursor no engine gave out is still refused.
  EXPECT_STATUS(engines_[0]->Pull(alice_, 1000, 100), kBadRequest);
}

TEST_F(ClusterSyncTest, AListenerThatLostItsSessionCatchesUpWhenItReconnects) {
  if (!fixture_) return;
  // No poll in the test's time: only the new session's catch-up, or a
  // notification once it listens again, can wake the wait.
  StartCluster({true, true, true}, 3600s);
  if (HasFatalFailure()) return;
  engines_[0]->Wait(alice_, 0, 60s,
                    [this](Result<WaitReply> r) { answers_.Add(r.ok() && r->changed); });
  ASSERT_GE(test::KillStoreBackends(*fixture_), kEngines * 2);  // stores and listeners
  // The first call of each store after the kill may fail: push until one lands.
  Result<PushReply> pushed = Unavailable("not pushed");
  for (int i = 0; i < 20 && !pushed.ok(); ++i) {
    pushed = PushNow(*engines_[1], alice_, "phone", {Row(1, "a", "team", "1")});
    if (!pushed.ok()) std::this_thread::sleep_for(100ms);
  }
  ASSERT_OK(pushed);
  EXPECT_TRUE(answers_.Await(1));
  EXPECT_EQ(answers_.changed(), 1);
}

}  // namespace
}  // namespace skiff::sync
