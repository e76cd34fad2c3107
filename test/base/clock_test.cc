#include "base/clock.h"

#include <thread>

#include <gtest/gtest.h>

#include "base/mutex.h"

namespace skiff {
namespace {

using namespace std::chrono_literals;

TEST(ManualClockTest, MovesOnlyWhenAdvanced) {
  ManualClock clock;
  const auto t0 = clock.Now();
  EXPECT_EQ(clock.Now(), t0);
  clock.Advance(120s);
  EXPECT_EQ(clock.Now() - t0, 120s);
}

// A thread sleeping until a deadline on a manual clock wakes when the test
// moves the clock there, and not for the passing of real time.
TEST(ManualClockTest, AWaitEndsWhenTheClockReachesItsDeadline) {
  ManualClock clock;
  Mutex mu;
  CondVar cv;
  const Clock::TimePoint deadline = clock.Now() + 10s;
  std::thread waiter([&] {
    MutexLock lock(&mu);
    while (clock.WaitUntil(cv, mu, deadline)) {
    }
  });
  clock.Advance(10s);
  waiter.join();  // hangs (and the test times out) if the wait never ends
  EXPECT_GE(clock.Now(), deadline);
}

TEST(ManualClockTest, AWaitPastItsDeadlineReturnsAtOnce) {
  ManualClock clock;
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  EXPECT_FALSE(clock.WaitUntil(cv, mu, clock.Now()));
}

TEST(SystemClockTest, AWaitPastItsDeadlineReturnsAtOnce) {
  SystemClock clock;
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  EXPECT_FALSE(clock.WaitUntil(cv, mu, clock.Now() - 1s));
}

TEST(SystemClockTest, NeverGoesBackwards) {
  SystemClock clock;
  auto prev = clock.Now();
  for (int i = 0; i < 1000; ++i) {
    auto now = clock.Now();
    EXPECT_GE(now, prev);
    prev = now;
  }
}

}  // namespace
}  // namespace skiff
