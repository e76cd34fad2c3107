#include "base/clock.h"

#include <gtest/gtest.h>

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
