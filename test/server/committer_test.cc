#include "server/internal/committer.h"

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "store/store.h"

#include "test/status_matchers.h"

namespace skiff::server::internal {
namespace {

// Fails the next `failures` writes, and can hold writes until released.
class FaultyStore : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Status Write(const store::WriteBatch& batch) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
    ++writes_;
    if (failures_ > 0) {
      --failures_;
      return Unavailable("disk on fire");
    }
    lock.unlock();
    return StoreWrapper::Write(batch);
  }
  void Hold(bool hold) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = !hold;
    cv_.notify_all();
  }
  void FailNext(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_ = n;
  }
  int writes() {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;  // guarded by mu_
  int failures_ = 0;  // guarded by mu_
  int writes_ = 0;    // guarded by mu_
};

class CommitterTest : public ::testing::Test {
 protected:
  SystemClock clock_;
  std::unique_ptr<store::Store> memory_ = store::NewMemoryStore();
  FaultyStore store_{*memory_};
};

TEST_F(CommitterTest, WritesQueuedDuringACommitShareTheNext) {
  Committer committer(store_, clock_, Durability::kCommit, std::chrono::milliseconds(100));
  store_.Hold(true);
  std::vector<std::future<Status>> done;
  auto write = [&](const std::string& key, std::optional<std::string> value) {
    auto p = std::make_shared<std::promise<Status>>();
    done.push_back(p->get_future());
    committer.Write("t", key, std::move(value),
                    [p](const Status& s, uint64_t) { p->set_value(s); });
  };
  write("first", "1");
  for (int i = 0; i < 50; ++i) write("k" + std::to_string(i % 5), std::to_string(i));
  write("first", std::nullopt);
  store_.Hold(false);
  for (auto& f : done) EXPECT_OK(f.get());
  // The first write may have gone alone; the 51 behind it went together.
  EXPECT_LE(store_.writes(), 2);
  EXPECT_FALSE(memory_->Get("t", "first")->has_value());
  EXPECT_EQ(**memory_->Get("t", "k4"), "49");  // the last write of a key wins
  EXPECT_OK(committer.Flush());
  EXPECT_EQ(committer.counters().writes, 52u);
}

TEST_F(CommitterTest, OnlyTheSameTableAndKeyAreOneDocument) {
  Committer committer(store_, clock_, Durability::kCommit, std::chrono::milliseconds(100));
  store_.Hold(true);
  committer.Write("t", "first", "0", nullptr);  // may go alone; the rest go together
  committer.Write("a", "k", "1", nullptr);
  committer.Write("b", "k", "2", nullptr);
  committer.Write("ab", "c", "3", nullptr);
  committer.Write("a", "bc", "4", nullptr);
  committer.Write("a", "k", "5", nullptr);
  store_.Hold(false);
  ASSERT_OK(committer.Flush());
  EXPECT_EQ(**memory_->Get("a", "k"), "5");
  EXPECT_EQ(**memory_->Get("b", "k"), "2");
  EXPECT_EQ(**memory_->Get("ab", "c"), "3");
  EXPECT_EQ(**memory_->Get("a", "bc"), "4");
}

TEST_F(CommitterTest, CommitFailureFailsEveryWriteOfTheTransaction) {
  Committer committer(store_, clock_, Durability::kCommit, std::chrono::milliseconds(100));
  store_.Hold(true);
  store_.FailNext(1);
  std::promise<Status> a;
  std::promise<Status> b;
  committer.Write("t", "a", "1", [&](const Status& s, uint64_t) { a.set_value(s); });
  committer.Write("t", "b", "2", [&](const Status& s, uint64_t) { b.set_value(s); });
  store_.Hold(false);
  EXPECT_EQ(a.get_future().get().code(), StatusCode::kUnavailable);
  // b went with a or alone after it; either way its fate is reported.
  Status sb = b.get_future().get();
  EXPECT_EQ(memory_->Get("t", "b")->has_value(), sb.ok());
  EXPECT_FALSE(memory_->Get("t", "a")->has_value());
  // Counters move once the attempt is complete, which Flush waits for.
  (void)committer.Flush();
  EXPECT_GE(committer.counters().failures, 1u);
}

TEST_F(CommitterTest, MemoryModeRetriesAFailedFlush) {
  Committer committer(store_, clock_, Durability::kMemory, std::chrono::milliseconds(5));
  store_.FailNext(2);
  std::atomic<int> done{0};
  committer.Write("t", "a", "1", [&](const Status& s, uint64_t) { done += s.ok() ? 1 : 100; });
  committer.Write("t", "b", "2", nullptr);
  // Flush reports failures until an attempt succeeds; bounded attempts.
  Status s;
  for (int i = 0; i < 100; ++i) {
    s = committer.Flush();
    if (s.ok()) break;
  }
  EXPECT_OK(s);
  EXPECT_EQ(**memory_->Get("t", "a"), "1");
  EXPECT_EQ(**memory_->Get("t", "b"), "2");
  EXPECT_EQ(done.load(), 1);  // told once, after the write finally landed
}

// A WriteLatest write stores what the document holds when it is written,
// not when it was queued; absent documents are deleted, unknown ones skipped.
TEST_F(CommitterTest, WriteLatestStoresTheStateAtCommitTime) {
  ASSERT_OK(memory_->Write([] {
    store::WriteBatch b;
    b.Put("t", "gone", "0");
    return b;
  }()));
  Committer committer(store_, clock_, Durability::kMemory, std::chrono::hours(1));
  std::mutex mu;
  std::string counter = "1";  // guarded by mu
  int reads = 0;              // guarded by mu
  committer.set_latest(
      [&](std::string_view table, std::string_view key, std::optional<std::string>* value) {
        std::lock_guard<std::mutex> lock(mu);
        ++reads;
        EXPECT_EQ(table, "t");
        if (key == "counter") {
          *value = counter;
        } else if (key == "gone") {
          value->reset();
        } else {
          return false;
        }
        return true;
      });
  const uint64_t first = committer.WriteLatest("t", "counter");
  EXPECT_EQ(committer.taken(), 0u);  // the hour-long interval has not passed
  // A plain write queued after it does not win: the WriteLatest write reads
  // the document as it is when written, newer than anything queued.
  committer.Write("t", "counter", "0", nullptr);
  committer.WriteLatest("t", "gone");
  committer.WriteLatest("t", "unknown");
  {
    std::lock_guard<std::mutex> lock(mu);
    counter = "2";  // changed after queueing: still carried by `first`
  }
  ASSERT_OK(committer.Flush());
  EXPECT_GE(committer.taken(), first);
  EXPECT_GE(committer.written(), first + 3);
  EXPECT_EQ(**memory_->Get("t", "counter"), "2");
  EXPECT_FALSE(memory_->Get("t", "gone")->has_value());
  EXPECT_FALSE(memory_->Get("t", "unknown")->has_value());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(reads, 3);
}

TEST_F(CommitterTest, StopWritesWhatIsQueued) {
  {
    Committer committer(store_, clock_, Durability::kMemory, std::chrono::hours(1));
    committer.Write("t", "a", "1", nullptr);
  }
  EXPECT_EQ(**memory_->Get("t", "a"), "1");
}

// Memory mode on a manual clock: the backlog ages and the interval passes
// only when the clock moves, however long the test runs.
TEST_F(CommitterTest, MemoryModeFlushesWhenItsClockPassesTheInterval) {
  ManualClock manual;
  Committer committer(store_, manual, Durability::kMemory, std::chrono::hours(1));
  std::promise<Status> landed;
  committer.Write("t", "a", "1", [&](const Status& s, uint64_t) { landed.set_value(s); });
  EXPECT_EQ(committer.backlog().writes, 1u);
  EXPECT_EQ(committer.backlog().oldest, std::chrono::nanoseconds(0));
  manual.Advance(std::chrono::seconds(3));
  EXPECT_EQ(committer.backlog().oldest, std::chrono::seconds(3));
  EXPECT_EQ(committer.taken(), 0u);  // the hour has not passed on the clock

  // The interval runs from when the committer's thread began to wait,
  // which this thread cannot see: move the clock an interval at a time
  // until the write lands (the bound is only for a committer that never
  // flushes).
  std::future<Status> done = landed.get_future();
  for (int i = 0;
       i < 6000 && done.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready; ++i) {
    manual.Advance(std::chrono::hours(1));
  }
  ASSERT_EQ(done.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_OK(done.get());
  EXPECT_EQ(**memory_->Get("t", "a"), "1");
  // Replies go out before the committer counts the batch written, so the
  // backlog is read once Flush has seen that bookkeeping (nothing is left
  // for it to write).
  ASSERT_OK(committer.Flush());
  EXPECT_EQ(store_.writes(), 1);
  EXPECT_EQ(committer.backlog().writes, 0u);
}

// A failed memory-mode flush is retried when the clock says so, not before.
TEST_F(CommitterTest, MemoryModeRetriesOnItsClock) {
  ManualClock manual;
  Committer committer(store_, manual, Durability::kMemory, std::chrono::hours(1));
  store_.FailNext(1);
  std::promise<Status> landed;
  committer.Write("t", "a", "1", [&](const Status& s, uint64_t) { landed.set_value(s); });
  // Flush makes the first attempt at once and reports its failure.
  EXPECT_STATUS(committer.Flush(), kUnavailable);
  EXPECT_TRUE(committer.backlog().failing);
  EXPECT_EQ(committer.backlog().writes, 1u);

  // The retry waits at most 200 ms of the clock (less than the interval).
  manual.Advance(std::chrono::milliseconds(200));
  std::future<Status> done = landed.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_OK(done.get());
  EXPECT_EQ(store_.writes(), 2);
  EXPECT_EQ(**memory_->Get("t", "a"), "1");
  EXPECT_FALSE(committer.backlog().failing);
}

}  // namespace
}  // namespace skiff::server::internal
