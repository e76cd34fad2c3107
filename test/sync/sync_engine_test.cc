// The sync engine over every store: pushes, pulls, bootstraps and held waits,
// with real SQLite files and a real PostgreSQL.
#include "sync/sync_engine.h"

#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "support/faulty_store.h"

#include "test/store/store_test_util.h"

namespace skiff::sync {
namespace {

using namespace std::chrono_literals;

Caller MakeCaller(std::string user, std::vector<std::string> groups) {
  return Caller{std::move(user), std::make_shared<const std::vector<std::string>>(groups)};
}

PushChange Row(uint64_t seq, std::string key, std::string group, std::optional<std::string> v) {
  return PushChange{seq, "tasks", std::move(key), std::move(group), std::move(v)};
}

class SyncEngineTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    test::OpenOrSkip(GetParam(), &fixture_);
    if (!fixture_) return;
    StartEngine();
  }
  void StartEngine() { StartEngineOn(fixture_->store()); }
  void StartEngineOn(store::Store& store) {
    engine_.reset();
    SyncOptions options;
    options.expiry_thread = false;  // the manual clock drives timeouts
    options.logger = &logger_;
    auto engine = SyncEngine::Start(store, clock_, options);
    ASSERT_OK(engine);
    engine_ = std::move(*engine);
  }
  // Restarts the engine on a wrapper of the test store (fault injection);
  // the fixture owns the wrapper, so it outlives the engine.
  template <typename Wrapper>
  Wrapper& StartEngineWrapped() {
    engine_.reset();
    auto wrapper = std::make_unique<Wrapper>(fixture_->store());
    Wrapper& ref = *wrapper;
    wrapper_ = std::move(wrapper);
    StartEngineOn(ref);
    return ref;
  }

  Result<PushReply> PushNow(const Caller& caller, std::string device,
                            std::vector<PushChange> changes) {
    std::promise<Result<PushReply>> done;
    auto future = done.get_future();
    engine_->Push(caller, PushRequest{std::move(device), std::move(changes)},
                  [&](Result<PushReply> r) { done.set_value(std::move(r)); });
    return future.get();
  }

  std::vector<std::string> PulledKeys(const Caller& caller, uint64_t since) {
    auto pulled = engine_->Pull(caller, since, 1000);
    EXPECT_OK(pulled);
    std::vector<std::string> keys;
    if (pulled.ok()) {
      for (const auto& c : pulled->changes) keys.push_back(c.key);
    }
    return keys;
  }

  ManualClock clock_;
  CapturingLogger logger_;  // outlives engine_
  std::unique_ptr<support::TestStore> fixture_;
  std::unique_ptr<store::Store> wrapper_;  // declared first: outlives engine_
  std::unique_ptr<SyncEngine> engine_;
  const Caller alice_ = MakeCaller("alice", {"team"});
  const Caller bob_ = MakeCaller("bob", {"team", "bobs"});
  const Caller eve_ = MakeCaller("eve", {"eves"});
};

TEST_P(SyncEngineTest, PushedChangesArePulledInSyncIdOrder) {
  auto pushed = PushNow(alice_, "phone", {Row(1, "a", "team", "1"), Row(2, "b", "team", "2")});
  ASSERT_OK(pushed);
  EXPECT_EQ(pushed->applied, 2u);
  EXPECT_EQ(pushed->last_seq, 2u);
  EXPECT_EQ(pushed->cursor, 2u);
  auto pulled = engine_->Pull(bob_, 0, 100);
  ASSERT_OK(pulled);
  ASSERT_EQ(pulled->changes.size(), 2u);
  EXPECT_EQ(pulled->changes[0].sync_id, 1u);
  EXPECT_EQ(pulled->changes[0].key, "a");
  EXPECT_EQ(pulled->changes[1].value, "2");
  EXPECT_EQ(pulled->cursor, 2u);
  EXPECT_FALSE(pulled->more);
}

TEST_P(SyncEngineTest, RetriedPushAppliesOnce) {
  std::vector<PushChange> outbox = {Row(1, "a", "team", "1"), Row(2, "b", "team", "2")};
  ASSERT_OK(PushNow(alice_, "phone", outbox));
  auto again = PushNow(alice_, "phone", outbox);
  ASSERT_OK(again);
  EXPECT_EQ(again->applied, 0u);
  EXPECT_EQ(again->last_seq, 2u);
  // Half retried, half new.
  auto mixed = PushNow(alice_, "phone", {Row(2, "b", "team", "2"), Row(3, "c", "team", "3")});
  ASSERT_OK(mixed);
  EXPECT_EQ(mixed->applied, 1u);
  EXPECT_EQ(PulledKeys(alice_, 0), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(engine_->counters().changes_skipped, 3u);
}

TEST_P(SyncEngineTest, PushOutsideYourGroupsIsForbiddenAndAppliesNothing) {
  auto r = PushNow(alice_, "phone", {Row(1, "a", "team", "1"), Row(2, "x", "eves", "2")});
  EXPECT_STATUS(r, kForbidden);
  EXPECT_EQ(engine_->cursor(), 0u);
  EXPECT_TRUE(PulledKeys(bob_, 0).empty());
}

TEST_P(SyncEngineTest, ADeviceBelongsToOneUser) {
  ASSERT_OK(PushNow(alice_, "phone", {Row(1, "a", "team", "1")}));
  EXPECT_STATUS(PushNow(bob_, "phone", {Row(2, "b", "team", "2")}), kForbidden);
  EXPECT_EQ(PulledKeys(bob_, 0), (std::vector<std::string>{"a"}));
}

TEST_P(SyncEngineTest, BadPushesAreRejectedBeforeAnythingIsQueued) {
  EXPECT_STATUS(PushNow(alice_, "", {Row(1, "a", "team", "1")}), kBadRequest);
  EXPECT_STATUS(PushNow(alice_, "p", {Row(2, "a", "team", "1"), Row(2, "b", "team", "1")}),
                kBadRequest);
  EXPECT_STATUS(PushNow(alice_, "p", {Row(0, "a", "team", "1")}), kBadRequest);
  EXPECT_STATUS(PushNow(alice_, "p", {Row(1, "", "team", "1")}), kBadRequest);
  EXPECT_STATUS(PushNow(alice_, "p", {Row(1, "a", "bad group", "1")}), kBadRequest);
  std::vector<PushChange> huge;
  for (uint64_t i = 1; i <= 1001; ++i) huge.push_back(Row(i, "k", "team", "1"));
  EXPECT_STATUS(PushNow(alice_, "p", huge), kTooLarge);
  EXPECT_EQ(engine_->cursor(), 0u);
}

TEST_P(SyncEngineTest, SeqsFrom2To63AreRefusedOnEveryStoreAndTheDeviceGoesOn) {
  const uint64_t top = store::kMaxDeviceSeq;  // 2^63 - 1, the largest stored
  auto refused = PushNow(alice_, "p", {Row(top + 1, "a", "team", "1")});
  EXPECT_STATUS(refused, kBadRequest);
  EXPECT_NE(refused.status().message().find("2^63"), std::string::npos) << refused.status();
  EXPECT_STATUS(PushNow(alice_, "p", {Row(UINT64_MAX, "a", "team", "1")}), kBadRequest);
  EXPECT_EQ(engine_->cursor(), 0u);
  // Nothing of the refused push was recorded: the device's next real change
  // is applied, not skipped as a retry.
  auto next = PushNow(alice_, "p", {Row(1, "a", "team", "1")});
  ASSERT_OK(next);
  EXPECT_EQ(next->applied, 1u);
  // The largest seq is stored and read back exactly, on every store.
  auto last = PushNow(alice_, "p", {Row(top, "b", "team", "2")});
  ASSERT_OK(last);
  EXPECT_EQ(last->applied, 1u);
  EXPECT_EQ(last->last_seq, top);
  auto device = fixture_->store().GetDevice("p");
  ASSERT_OK(device);
  ASSERT_TRUE(device->has_value());
  EXPECT_EQ((*device)->last_seq, top);
}

TEST_P(SyncEngineTest, PullShowsOnlyVisibleGroupsAndPages) {
  ASSERT_OK(
      PushNow(bob_, "laptop",
              {Row(1, "t1", "team", "1"), Row(2, "b1", "bobs", "1"), Row(3, "t2", "team", "2"),
               Row(4, "b2", "bobs", "2"), Row(5, "t3", "team", "3")}));
  EXPECT_EQ(PulledKeys(alice_, 0), (std::vector<std::string>{"t1", "t2", "t3"}));
  EXPECT_TRUE(PulledKeys(eve_, 0).empty());
  auto page = engine_->Pull(alice_, 0, 2);
  ASSERT_OK(page);
  EXPECT_TRUE(page->more);
  EXPECT_EQ(page->cursor, 3u);
  auto rest = engine_->Pull(alice_, page->cursor, 2);
  ASSERT_OK(rest);
  ASSERT_EQ(rest->changes.size(), 1u);
  EXPECT_EQ(rest->changes[0].key, "t3");
  // A user with nothing visible still moves to the server's cursor.
  auto none = engine_->Pull(eve_, 0, 10);
  ASSERT_OK(none);
  EXPECT_EQ(none->cursor, 5u);
  EXPECT_FALSE(none->more);
  EXPECT_STATUS(engine_->Pull(alice_, 99, 10), kBadRequest);
  EXPECT_STATUS(engine_->Pull(alice_, 0, 0), kBadRequest);
}

TEST_P(SyncEngineTest, BootstrapThenPullConverges) {
  for (uint64_t i = 1; i <= 25; ++i) {
    ASSERT_OK(PushNow(alice_, "phone", {Row(i, "k" + std::to_string(100 + i), "team", "1")}));
  }
  ASSERT_OK(PushNow(bob_, "laptop", {Row(1, "private", "bobs", "1")}));
  std::map<std::string, std::string> device;
  store::SyncRowCursor after;
  uint64_t cursor = 0;
  bool first = true;
  for (int pages = 0; pages < 100; ++pages) {
    auto page = engine_->Bootstrap(alice_, after, 10);
    ASSERT_OK(page);
    if (first) cursor = page->cursor;
    first = false;
    for (const auto& row : page->rows) device[row.key] = row.value;
    if (!page->next) break;
    after = *page->next;
  }
  EXPECT_EQ(device.size(), 25u);
  EXPECT_EQ(device.count("private"), 0u);
  EXPECT_EQ(cursor, 26u);
  ASSERT_OK(PushNow(bob_, "laptop", {Row(2, "k101", "team", std::nullopt)}));
  auto pulled = engine_->Pull(alice_, cursor, 100);
  ASSERT_OK(pulled);
  ASSERT_EQ(pulled->changes.size(), 1u);
  EXPECT_EQ(pulled->changes[0].value, std::nullopt);
}

TEST_P(SyncEngineTest, WaitAtTheCurrentCursorHoldsUntilAVisibleWrite) {
  ASSERT_OK(PushNow(alice_, "phone", {Row(1, "a", "team", "1")}));
  std::optional<Result<WaitReply>> answer;
  const uint64_t since = engine_->cursor();  // read at open, as a device does
  const auto id = engine_->Wait(alice_, since, 30s, [&](Result<WaitReply> r) { answer = r; });
  EXPECT_NE(id, 0u);
  EXPECT_FALSE(answer.has_value());
  const uint64_t statements = fixture_->store().counters().statements;

  // An invisible write does not wake it; holding sends no SQL.
  ASSERT_OK(PushNow(eve_, "eve-phone", {Row(1, "e", "eves", "1")}));
  EXPECT_FALSE(answer.has_value());
  EXPECT_EQ(engine_->counters().waits_held, 1u);
  engine_->ExpireDueWaits();
  EXPECT_FALSE(answer.has_value());
  // The device read, then the push's statements.
  const uint64_t eve_push = GetParam() == "memory" ? 0 : 2;
  EXPECT_EQ(fixture_->store().counters().statements - statements, eve_push);

  ASSERT_OK(PushNow(bob_, "laptop", {Row(1, "b", "team", "1")}));
  ASSERT_TRUE(answer.has_value());
  ASSERT_OK(*answer);
  EXPECT_TRUE((*answer)->changed);
  EXPECT_EQ((*answer)->cursor, 3u);
  EXPECT_EQ(engine_->counters().waits_held, 0u);
}

TEST_P(SyncEngineTest, WaitTimesOutAndIsAnsweredAtOnceWhenBehind) {
  std::optional<Result<WaitReply>> answer;
  engine_->Wait(alice_, 0, 5s, [&](Result<WaitReply> r) { answer = r; });
  clock_.Advance(4s);
  engine_->ExpireDueWaits();
  EXPECT_FALSE(answer.has_value());
  clock_.Advance(1s);
  engine_->ExpireDueWaits();
  ASSERT_TRUE(answer.has_value());
  EXPECT_FALSE((*answer)->changed);

  ASSERT_OK(PushNow(alice_, "phone", {Row(1, "a", "team", "1")}));
  answer.reset();
  EXPECT_EQ(engine_->Wait(alice_, 0, 5s, [&](Result<WaitReply> r) { answer = r; }), 0u);
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE((*answer)->changed);
  EXPECT_EQ((*answer)->cursor, 1u);
}

TEST_P(SyncEngineTest, CancelledWaitIsNotAnswered) {
  bool answered = false;
  auto id = engine_->Wait(alice_, 0, 5s, [&](Result<WaitReply>) { answered = true; });
  engine_->CancelWait(id);
  ASSERT_OK(PushNow(alice_, "phone", {Row(1, "a", "team", "1")}));
  EXPECT_FALSE(answered);
}

TEST_P(SyncEngineTest, ConcurrentPushesGetUniqueGaplessIds) {
  constexpr int kDevices = 16, kPushes = 20;
  std::vector<std::thread> threads;
  for (int d = 0; d < kDevices; ++d) {
    threads.emplace_back([&, d] {
      for (int i = 1; i <= kPushes; ++i) {
        auto r = PushNow(alice_, "dev" + std::to_string(d),
                         {Row(i, "d" + std::to_string(d) + "-" + std::to_string(i), "team", "1")});
        EXPECT_OK(r);
      }
    });
  }
  for (auto& t : threads) t.join();
  auto pulled = engine_->Pull(alice_, 0, 1000);
  ASSERT_OK(pulled);
  ASSERT_EQ(pulled->changes.size(), size_t{kDevices * kPushes});
  for (size_t i = 0; i < pulled->changes.size(); ++i) {
    EXPECT_EQ(pulled->changes[i].sync_id, i + 1);
  }
  // Group commit: fewer transactions than pushes once pushes overlap; never more.
  EXPECT_LE(engine_->counters().commits, uint64_t{kDevices * kPushes});
}

TEST_P(SyncEngineTest, RestartKeepsCursorAndDeviceSequences) {
  if (GetParam() == "memory") GTEST_SKIP() << "memory: keeps nothing by design";
  ASSERT_OK(PushNow(alice_, "phone", {Row(1, "a", "team", "1"), Row(2, "b", "team", "2")}));
  engine_.reset();
  fixture_->Close();
  auto reopened = store::OpenStore(fixture_->url());
  ASSERT_OK(reopened);
  SyncOptions options;
  options.expiry_thread = false;
  auto engine = SyncEngine::Start(**reopened, clock_, options);
  ASSERT_OK(engine);
  EXPECT_EQ((*engine)->cursor(), 2u);
  std::promise<Result<PushReply>> done;
  (*engine)->Push(alice_, {"phone", {Row(2, "b", "team", "2"), Row(3, "c", "team", "3")}},
                  [&](Result<PushReply> r) { done.set_value(std::move(r)); });
  auto r = done.get_future().get();
  ASSERT_OK(r);
  EXPECT_EQ(r->applied, 1u);
  EXPECT_EQ(r->cursor, 3u);
  // A held wait survives nothing, but a new one sees the loaded group ids.
  std::optional<Result<WaitReply>> answer;
  (*engine)->Wait(alice_, 1, 5s, [&](Result<WaitReply> w) { answer = w; });
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE((*answer)->changed);
}

TEST_P(SyncEngineTest, PushStatementsFirstAndLater) {
  auto& store = fixture_->store();
  const uint64_t s0 = store.counters().statements;
  ASSERT_OK(PushNow(alice_, "phone", {Row(1, "a", "team", "1")}));
  const uint64_t s1 = store.counters().statements;
  ASSERT_OK(PushNow(alice_, "phone", {Row(2, "b", "team", "2")}));
  const uint64_t s2 = store.counters().statements;
  // The first push reads the device, then every store sends one statement
  // for the log, the row and the device (SQLite: an insert into the view
  // skiff_push, whose triggers write all three).
  const uint64_t later = GetParam() == "memory" ? 0 : 1;
  const uint64_t first = GetParam() == "memory" ? 0 : later + 1;
  EXPECT_EQ(s1 - s0, first);
  EXPECT_EQ(s2 - s1, later);
}

TEST_P(SyncEngineTest, AnotherGroupCannotTouchYourRow) {
  ASSERT_OK(PushNow(alice_, "phone", {Row(1, "plan", "team", "\"ours\"")}));
  // Eve names the same table and key under her own group: a different row.
  ASSERT_OK(PushNow(eve_, "eve-phone", {Row(1, "plan", "eves", "\"vandalised\"")}));
  ASSERT_OK(PushNow(eve_, "eve-phone", {Row(2, "plan", "eves", std::nullopt)}));
  auto team = engine_->Bootstrap(alice_, {}, 10);
  ASSERT_OK(team);
  ASSERT_EQ(team->rows.size(), 1u);
  EXPECT_EQ(team->rows[0].value, "\"ours\"");
  EXPECT_EQ(PulledKeys(alice_, 0), (std::vector<std::string>{"plan"}));
}

TEST_P(SyncEngineTest, ACommitOfUnknownOutcomeIsReportedSoAndPublishedIfItLanded) {
  auto& faulty = StartEngineWrapped<support::FaultyStore>();

  std::optional<Result<WaitReply>> answer;
  engine_->Wait(bob_, 0, 30s, [&](Result<WaitReply> r) { answer = r; });
  faulty.ApplyThenLose(OutcomeUnknown("connection lost at COMMIT, check failed"));
  // The store could not tell: neither success nor "nothing changed" would be
  // true, so the pusher hears exactly that. The engine reads what landed:
  // the change did, so it is published (its ids are never reused).
  auto lost = PushNow(alice_, "phone", {Row(1, "a", "team", "1")});
  EXPECT_STATUS(lost, kOutcomeUnknown);
  EXPECT_EQ(engine_->cursor(), 1u);
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE((*answer)->changed);
  // The device retries: applied once, never twice; later pushes get new ids.
  auto retry = PushNow(alice_, "phone", {Row(1, "a", "team", "1")});
  ASSERT_OK(retry);
  EXPECT_EQ(retry->applied, 0u);
  auto next = PushNow(bob_, "laptop", {Row(1, "b", "team", "2")});
  ASSERT_OK(next);
  EXPECT_EQ(next->cursor, 2u);
  EXPECT_EQ(PulledKeys(bob_, 0), (std::vector<std::string>{"a", "b"}));
}

TEST_P(SyncEngineTest, AFailedCommitIsReportedAndItsIdsReused) {
  auto& faulty = StartEngineWrapped<support::FaultyStore>();
  faulty.Refuse(Unavailable("disk full"));
  auto failed = PushNow(alice_, "phone", {Row(1, "a", "team", "1")});
  EXPECT_STATUS(failed, kUnavailable);
  EXPECT_EQ(failed.status().message().find("disk"), std::string::npos);  // store text stays inside
  EXPECT_EQ(engine_->cursor(), 0u);
  auto retry = PushNow(alice_, "phone", {Row(1, "a", "team", "1")});
  ASSERT_OK(retry);
  EXPECT_EQ(retry->applied, 1u);
  EXPECT_EQ(retry->cursor, 1u);
}

// The store's own words go to the operator, through the engine's logger,
// never to the pusher.
TEST_P(SyncEngineTest, AFailedCommitIsLoggedAsAnErrorOfTheSyncEngine) {
  auto& faulty = StartEngineWrapped<support::FaultyStore>();
  faulty.Refuse(Unavailable("disk full"));
  EXPECT_STATUS(PushNow(alice_, "phone", {Row(1, "a", "team", "1")}), kUnavailable);
  const std::vector<CapturingLogger::Event> events = logger_.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].level, LogLevel::kError);
  EXPECT_EQ(events[0].component, "sync");
  EXPECT_NE(events[0].message.find("commit of 1 pushes failed"), std::string::npos)
      << events[0].message;
  EXPECT_NE(events[0].message.find("disk full"), std::string::npos) << events[0].message;
  EXPECT_EQ(logger_.lines()[0].rfind("skiffd: error: sync: commit of 1 pushes failed", 0), 0u)
      << logger_.lines()[0];
}

TEST_P(SyncEngineTest, AnotherWritersCommitIsNeverTakenForOurs) {
  auto& faulty = StartEngineWrapped<support::FaultyStore>();
  // While our commit fails, another writer commits a change with the very
  // sync id ours would have had. The cursor then moves exactly as if ours
  // had landed; the engine must still report ours failed.
  store::WriteBatch other;
  other.AppendChange({1, "team", "tasks", "theirs", "\"B\""});
  faulty.OtherWriterThenRefuse(std::move(other), Unavailable("connection lost, nothing applied"));
  auto ours = PushNow(alice_, "phone", {Row(1, "ours", "team", "\"A\"")});
  EXPECT_STATUS(ours, kUnavailable);
  EXPECT_EQ(faulty.faults_met(), 1);
  // The retry is applied, after the other writer's change.
  auto retry = PushNow(alice_, "phone", {Row(1, "ours", "team", "\"A\"")});
  ASSERT_OK(retry);
  EXPECT_EQ(retry->applied, 1u);
  EXPECT_EQ(retry->cursor, 2u);
  EXPECT_EQ(PulledKeys(alice_, 0), (std::vector<std::string>{"theirs", "ours"}));
}

// Holds the first write until released, so pushes queued meanwhile share the
// next commit.
class GatedStore : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Status Write(const store::WriteBatch& batch) override {
    if (!passed_.exchange(true)) {
      entered_.set_value();
      gate_.get_future().wait();
    }
    ++writes_;
    return StoreWrapper::Write(batch);
  }
  std::atomic<bool> passed_{false};
  std::promise<void> entered_;
  std::promise<void> gate_;
  std::atomic<int> writes_{0};
};

TEST_P(SyncEngineTest, ARefusedPushDoesNotFailTheOthersInItsCommit) {
  GatedStore& gated = StartEngineWrapped<GatedStore>();

  std::promise<Result<PushReply>> first, bad, good;
  engine_->Push(alice_, {"phone", {Row(1, "first", "team", "1")}},
                [&](Result<PushReply> r) { first.set_value(r); });
  gated.entered_.get_future().wait();  // the committer is inside the first write
  engine_->Push(eve_, {"eve-phone", {Row(1, "bad", "eves", std::string("\"a\0b\"", 5))}},
                [&](Result<PushReply> r) { bad.set_value(r); });
  engine_->Push(bob_, {"laptop", {Row(1, "good", "team", "1")}},
                [&](Result<PushReply> r) { good.set_value(r); });
  gated.gate_.set_value();
  ASSERT_OK(first.get_future().get());
  auto bad_reply = bad.get_future().get();
  auto good_reply = good.get_future().get();
  EXPECT_STATUS(bad_reply, kBadRequest);
  ASSERT_OK(good_reply);
  EXPECT_EQ(good_reply->applied, 1u);
  // The refused push's error names nothing of the other pushes.
  EXPECT_EQ(bad_reply.status().message().find("good"), std::string::npos);
  EXPECT_EQ(PulledKeys(bob_, 0), (std::vector<std::string>{"first", "good"}));
}

TEST_P(SyncEngineTest, FlushWaitsUntilEveryQueuedPushIsAnswered) {
  GatedStore& gated = StartEngineWrapped<GatedStore>();
  std::atomic<int> answered{0};
  engine_->Push(alice_, {"phone", {Row(1, "a", "team", "1")}},
                [&](Result<PushReply> r) { answered += r.ok() ? 1 : 100; });
  gated.entered_.get_future().wait();  // the first push is inside its commit
  for (uint64_t i = 2; i <= 20; ++i) {
    engine_->Push(alice_, {"phone", {Row(i, "k" + std::to_string(i), "team", "1")}},
                  [&](Result<PushReply> r) { answered += r.ok() ? 1 : 100; });
  }
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gated.gate_.set_value();
  });
  engine_->Flush();
  EXPECT_EQ(answered.load(), 20);
  release.join();
}

INSTANTIATE_TEST_SUITE_P(AllStores, SyncEngineTest, testing::Values("memory", "sqlite", "postgres"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace skiff::sync
