// The sustainable-rate search's arithmetic, over a probe function that
// answers as a server with a known limit would: a rate holds when it is at
// most the limit. The confirmation then runs the answer again and steps down
// while that run does not hold.
#include "support/rate_search.h"

#include <chrono>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

namespace skiff::bench {
namespace {

constexpr double kBoundUs = 10'000;

// One second of replies at `rate` (the closed loop reaches `capacity`), with
// a p99 of 1 ms when `holds`, else 50 ms.
RunResult ProbeRun(double rate, double capacity, bool holds) {
  RunResult r;
  r.wall_seconds = 1;
  r.ops = static_cast<uint64_t>(rate > 0 ? rate : capacity);
  for (int i = 0; i < 100; ++i) r.latency.Record(std::chrono::milliseconds(holds ? 1 : 50));
  return r;
}

TEST(RateSearchTest, FindsTheLimitWithinCapacityOverTwoToTheSteps) {
  const double limit = 600, capacity = 1000;
  auto probe = [&](double rate) { return ProbeRun(rate, capacity, rate <= limit); };
  const RateSearch s = FindSustainableRate(probe, kBoundUs, 5);
  EXPECT_EQ(s.capacity, capacity);
  EXPECT_LE(s.sustainable, limit);
  EXPECT_GT(s.sustainable, limit - capacity / 32);
  EXPECT_EQ(s.probes.size(), 6u);  // the closed loop and five halvings
}

// Confirms `found` over servers where `holds(rate)` says which rates hold;
// returns the rates run, in order.
std::vector<double> Confirm(double found, const std::function<bool(double)>& holds, int tries,
                            RateSearch* s) {
  s->sustainable = found;
  std::vector<double> asked;
  ConfirmSustainableRate(
      [&](double rate) {
        asked.push_back(rate);
        return ProbeRun(rate, 1000, holds(rate));
      },
      kBoundUs, tries, s);
  return asked;
}

TEST(RateSearchTest, AnAnswerThatHoldsAgainIsConfirmedAsItIs) {
  RateSearch s;
  EXPECT_EQ(Confirm(
                500, [](double) { return true; }, 3, &s),
            std::vector<double>{500});
  EXPECT_TRUE(s.confirmed);
  EXPECT_EQ(s.sustainable, 500);
  EXPECT_EQ(s.confirmation_runs, 1);
}

TEST(RateSearchTest, AnAnswerThatFailsAgainStepsDownToARateThatHolds) {
  RateSearch s;
  // The backlog shows now: only 450/s and below hold.
  EXPECT_EQ(Confirm(
                800, [](double rate) { return rate <= 450; }, 3, &s),
            (std::vector<double>{800, 600, 450}));
  EXPECT_TRUE(s.confirmed);
  EXPECT_EQ(s.sustainable, 450);
}

TEST(RateSearchTest, NoRunThatHoldsMeansZero) {
  RateSearch s;
  EXPECT_EQ(Confirm(
                800, [](double) { return false; }, 3, &s)
                .size(),
            3u);
  EXPECT_FALSE(s.confirmed);
  EXPECT_EQ(s.sustainable, 0);
  EXPECT_EQ(s.confirmation_runs, 3);
  RateSearch none;  // the search found nothing: nothing is run
  EXPECT_TRUE(Confirm(
                  0, [](double) { return true; }, 3, &none)
                  .empty());
  EXPECT_EQ(none.sustainable, 0);
}

TEST(RateSearchTest, ARunShortOfItsRateDoesNotHold) {
  RateSearch s;
  s.sustainable = 1000;
  // Replies at 90 % of the rate asked, with a good p99: not sustained.
  ConfirmSustainableRate(
      [&](double rate) {
        RunResult r = ProbeRun(rate, 1000, true);
        r.ops = static_cast<uint64_t>(rate * 0.9);
        return r;
      },
      kBoundUs, 1, &s);
  EXPECT_FALSE(s.confirmed);
  EXPECT_EQ(s.sustainable, 0);
}

}  // namespace
}  // namespace skiff::bench
