// The load driver's open loop against a real server (in process, SQLite):
// requests go out on schedule and never early, every one is answered and
// counted, and a server that holds requests shows in the latency of the
// requests waiting behind them (latency from when a request was due, not
// from when a free slot let it out). The assertions are lower bounds that
// a slow machine can only make larger.
#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "support/load_driver.h"
#include "support/stack.h"

#include "test/status_matchers.h"

namespace skiff::bench {
namespace {

using std::chrono::milliseconds;

class SameRequest final : public Workload {
 public:
  explicit SameRequest(std::string body) : body_(std::move(body)) {}
  bool Next(size_t, size_t, std::string& body) override {
    body += body_;
    return true;
  }
  std::string Check(size_t, size_t, const ReplyView&) override { return {}; }

 private:
  const std::string body_;
};

// An open-loop run of `work`: `ops` requests at `rate` per second.
RunResult OpenLoop(LoadDriver& driver, Workload& work, double rate, uint64_t ops) {
  RunLimits limits;
  limits.rate = rate;
  limits.max_ops = ops;
  limits.cap = std::chrono::seconds(60);
  return driver.Run(work, limits);
}

// Every case runs on its own server: a case that holds requests must not
// delay the next case's.
class OpenLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StackOptions options;
    options.store = "sqlite";
    Result<std::unique_ptr<Stack>> stack = Stack::Start(options);
    ASSERT_OK(stack);
    stack_ = std::move(*stack);
  }

  // `connections` connections of `pipeline` slots each; null (and the case
  // failed) when they cannot connect.
  std::unique_ptr<LoadDriver> Connect(size_t connections, size_t pipeline) {
    Result<std::unique_ptr<LoadDriver>> driver =
        stack_->Connect(connections, pipeline, milliseconds(10000));
    EXPECT_OK(driver);
    return driver.ok() ? std::move(*driver) : nullptr;
  }

 private:
  std::unique_ptr<Stack> stack_;
};

TEST_F(OpenLoopTest, SendsOnScheduleAndNeverEarly) {
  auto driver = Connect(4, 8);
  ASSERT_NE(driver, nullptr);
  SameRequest ping(R"("op":"ping")");
  const RunResult run = OpenLoop(*driver, ping, 2000, 300);
  EXPECT_EQ(run.ops, 300u);
  EXPECT_EQ(run.error_count(), 0u) << run.first_error;
  EXPECT_FALSE(run.capped);
  EXPECT_EQ(run.latency.Summarize().count, 300u);
  // Request 299 is due 299/2000 s after the start, and not sent before.
  EXPECT_GE(run.wall_seconds, 299.0 / 2000.0);
}

TEST_F(OpenLoopTest, LatencyCountsTheWaitForAFreeSlot) {
  // One slot, and a request the server holds for 30 ms (a sync wait that
  // nothing wakes), due every 5 ms: request k waits for the k before it.
  auto driver = Connect(1, 1);
  ASSERT_NE(driver, nullptr);
  SameRequest wait(R"("op":"wait","since":0,"timeout_ms":30)");
  const RunResult run = OpenLoop(*driver, wait, 200, 10);
  ASSERT_EQ(run.ops, 10u);
  EXPECT_EQ(run.error_count(), 0u) << run.first_error;
  // The last request was due at 45 ms and answered no sooner than 300 ms
  // after the start (ten holds of 30 ms, one after the other).
  const LatencySummary latency = run.latency.Summarize();
  EXPECT_GE(latency.max_us, 300'000.0 - 45'000.0);
  EXPECT_GE(run.sent_late, 8u);
  EXPECT_EQ(run.slots, 1u);
  EXPECT_LE(run.late_waiting_for_slot, run.sent_late);
  // A closed loop on the same slot sees only the holds themselves.
  RunLimits closed;
  closed.max_ops = 10;
  const RunResult c = driver->Run(wait, closed);
  EXPECT_EQ(c.error_count(), 0u) << c.first_error;
  EXPECT_GE(c.latency.Summarize().max_us, 30'000.0);
  EXPECT_EQ(c.sent_late, 0u);
}

// One slot alternates between the closed loop (plain blocking calls on the
// socket) and the open loop (Asio's event loop), as a sequential scenario's
// set-up and its rate search do: each run gets every reply, none is lost.
TEST_F(OpenLoopTest, OneSlotSwitchesBetweenClosedAndOpenLoops) {
  auto driver = Connect(1, 1);
  ASSERT_NE(driver, nullptr);
  SameRequest ping(R"("op":"ping")");
  RunLimits closed;
  closed.max_ops = 50;
  for (int round = 0; round < 3; ++round) {
    const RunResult c = driver->Run(ping, closed);
    EXPECT_EQ(c.ops, 50u) << "round " << round;
    EXPECT_EQ(c.error_count(), 0u) << c.first_error;
    const RunResult o = OpenLoop(*driver, ping, 2000, 50);
    EXPECT_EQ(o.ops, 50u) << "round " << round;
    EXPECT_EQ(o.error_count(), 0u) << o.first_error;
    Result<std::string> one = driver->Call(R"("op":"ping")");
    ASSERT_OK(one);
    EXPECT_NE(one->find("\"ok\":true"), std::string::npos) << *one;
  }
}

TEST_F(OpenLoopTest, RequestsStillDueAtTheCapAreLate) {
  // One slot held 200 ms by the first request; one request due every 10 ms
  // and a cap of 100 ms: the ten due before the cap never all go out, and
  // those that did not are late, not missing.
  auto driver = Connect(1, 1);
  ASSERT_NE(driver, nullptr);
  SameRequest wait(R"("op":"wait","since":0,"timeout_ms":200)");
  RunLimits limits;
  limits.rate = 100;
  limits.max_ops = 50;
  limits.cap = milliseconds(100);
  const RunResult run = driver->Run(wait, limits);
  EXPECT_EQ(run.error_count(), 0u) << run.first_error;
  EXPECT_LE(run.ops, 1u);
  EXPECT_TRUE(run.capped);
  EXPECT_GE(run.sent_late, 9u);
}

}  // namespace
}  // namespace skiff::bench
