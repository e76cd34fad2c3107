// The sustainable-rate search's rules, over a probe function that answers
// as a server with a known limit would: a rate holds when it is at most the
// limit. Probes are judged held, failed or void (the client fell behind);
// the confirmation runs the answer again, steps down while that run does not
// hold, and probes again a rate that fails below one that held.
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
  r.slots = 512;
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
  EXPECT_EQ(s.found, s.sustainable);
  EXPECT_EQ(s.probes.size(), 6u);  // the closed loop and five halvings
  EXPECT_EQ(s.void_probes, 0);
  EXPECT_EQ(s.client_limit, 0);
}

TEST(RateSearchTest, NoRateThatHoldsFindsZero) {
  auto probe = [](double rate) { return ProbeRun(rate, 1000, rate == 0); };
  const RateSearch s = FindSustainableRate(probe, kBoundUs, 5);
  EXPECT_EQ(s.capacity, 1000);
  EXPECT_EQ(s.found, 0);
  EXPECT_EQ(s.sustainable, 0);
  for (size_t i = 1; i < s.probes.size(); ++i) {
    EXPECT_EQ(s.probes[i].verdict, ProbeVerdict::kFailed);
    EXPECT_FALSE(s.probes[i].why.empty());
  }
}

// A run at `rate` where `late` of its requests went out late for the
// client's thread and `for_slot` waited for a slot of a `slots` pool.
RunResult LateRun(double rate, uint64_t late, uint64_t for_slot, uint64_t slots) {
  RunResult r = ProbeRun(rate, 1000, true);
  r.sent_late = late + for_slot;
  r.late_waiting_for_slot = for_slot;
  r.slots = slots;
  return r;
}

TEST(RateSearchTest, AClientBehindItsScheduleMakesTheProbeVoid) {
  // 10,000 requests: 1 % late is the most a probe may have.
  EXPECT_EQ(JudgeProbe(10'000, LateRun(10'000, 100, 0, 512), kBoundUs).verdict,
            ProbeVerdict::kHeld);
  const RateProbe p = JudgeProbe(10'000, LateRun(10'000, 101, 0, 512), kBoundUs);
  EXPECT_EQ(p.verdict, ProbeVerdict::kVoid);
  EXPECT_NE(p.why.find("client"), std::string::npos) << p.why;
  // Void even with a p99 over the bound: the lateness is in that p99.
  RunResult slow = LateRun(10'000, 500, 0, 512);
  slow.latency = ProbeRun(10'000, 1000, false).latency;
  EXPECT_EQ(JudgeProbe(10'000, slow, kBoundUs).verdict, ProbeVerdict::kVoid);
}

TEST(RateSearchTest, WaitsForASlotAreTheClientsOnlyWhenThePoolIsTooSmall) {
  // 10,000/s for a 10 ms bound needs 100 slots in flight.
  RunResult small = LateRun(10'000, 0, 500, 64);
  small.latency = ProbeRun(10'000, 1000, false).latency;
  EXPECT_EQ(JudgeProbe(10'000, small, kBoundUs).verdict, ProbeVerdict::kVoid);
  // With enough slots a full pool is the server's backlog: judged by p99.
  RunResult enough = LateRun(10'000, 0, 500, 512);
  enough.latency = ProbeRun(10'000, 1000, false).latency;
  EXPECT_EQ(JudgeProbe(10'000, enough, kBoundUs).verdict, ProbeVerdict::kFailed);
  EXPECT_EQ(JudgeProbe(10'000, LateRun(10'000, 0, 500, 512), kBoundUs).verdict,
            ProbeVerdict::kHeld);
}

TEST(RateSearchTest, ErrorsFailAProbeEvenWhenTheClientWasLate) {
  RunResult r = LateRun(10'000, 5'000, 0, 512);
  r.errors[static_cast<size_t>(ErrorKind::kTimeout)] = 1;
  EXPECT_EQ(JudgeProbe(10'000, r, kBoundUs).verdict, ProbeVerdict::kFailed);
}

TEST(RateSearchTest, NoRateAtOrAboveAVoidProbeIsClaimed) {
  // The server holds up to 900/s, but the client cannot send over 400/s.
  auto probe = [](double rate) {
    return rate > 400 ? LateRun(rate, uint64_t(rate), 0, 512) : ProbeRun(rate, 1000, rate <= 900);
  };
  const RateSearch s = FindSustainableRate(probe, kBoundUs, 5);
  EXPECT_GT(s.void_probes, 0);
  EXPECT_GT(s.client_limit, 400);
  EXPECT_LE(s.client_limit, 500);
  EXPECT_LE(s.sustainable, 400);
  EXPECT_GT(s.sustainable, 400 - 1000.0 / 32);
  for (const RateProbe& p : s.probes) {
    if (p.verdict == ProbeVerdict::kHeld) {
      EXPECT_LT(p.target, s.client_limit);
    }
  }
}

// Confirms `found` over servers where `holds(rate, run)` says whether the
// run-th run (from 0) holds; returns the rates run, in order.
std::vector<double> Confirm(double found, const std::function<bool(double, int)>& holds, int tries,
                            RateSearch* s) {
  s->sustainable = found;
  std::vector<double> asked;
  ConfirmSustainableRate(
      [&](double rate) {
        const int run = static_cast<int>(asked.size());
        asked.push_back(rate);
        return ProbeRun(rate, 1000, holds(rate, run));
      },
      kBoundUs, tries, s);
  return asked;
}

TEST(RateSearchTest, AnAnswerThatHoldsAgainIsConfirmedAsItIs) {
  RateSearch s;
  EXPECT_EQ(Confirm(
                500, [](double, int) { return true; }, 3, &s),
            std::vector<double>{500});
  EXPECT_TRUE(s.confirmed);
  EXPECT_EQ(s.sustainable, 500);
  EXPECT_EQ(s.confirmation_runs, 1);
  EXPECT_EQ(s.inversions, 0);
}

TEST(RateSearchTest, AnAnswerThatFailsAgainStepsDownToARateThatHolds) {
  RateSearch s;
  // The backlog shows now: only 450/s and below hold. Nothing held above
  // 800 before, so no rate is below one that held.
  EXPECT_EQ(Confirm(
                800, [](double rate, int) { return rate <= 450; }, 3, &s),
            (std::vector<double>{800, 600, 450}));
  EXPECT_TRUE(s.confirmed);
  EXPECT_EQ(s.sustainable, 450);
  EXPECT_EQ(s.inversions, 0);
  EXPECT_TRUE(s.monotonic);
}

// A search where `held` held, as FindSustainableRate would leave it.
RateSearch AfterHolding(double held) {
  RateSearch s;
  RateProbe p;
  p.target = held;
  p.verdict = ProbeVerdict::kHeld;
  s.probes.push_back(p);
  return s;
}

TEST(RateSearchTest, AFailureBelowAHeldRateIsProbedAgainAndStandsIfItHolds) {
  RateSearch s = AfterHolding(800);
  // 800 fails now; 600 fails once (a stall), then holds.
  EXPECT_EQ(Confirm(
                800, [](double rate, int run) { return rate < 800 && run > 1; }, 3, &s),
            (std::vector<double>{800, 600, 600}));
  EXPECT_EQ(s.inversions, 1);
  EXPECT_TRUE(s.monotonic);
  EXPECT_TRUE(s.confirmed);
  EXPECT_EQ(s.sustainable, 600);
  EXPECT_NE(s.inversion.find("600/s failed below 800/s"), std::string::npos) << s.inversion;
  EXPECT_TRUE(s.probes.back().repeat);
}

TEST(RateSearchTest, AFailureBelowAHeldRateTwiceClaimsNoRate) {
  RateSearch s = AfterHolding(800);
  EXPECT_EQ(Confirm(
                800, [](double, int) { return false; }, 3, &s),
            (std::vector<double>{800, 600, 600}));
  EXPECT_EQ(s.inversions, 1);
  EXPECT_FALSE(s.monotonic);
  EXPECT_FALSE(s.confirmed);
  EXPECT_EQ(s.sustainable, 0);
}

TEST(RateSearchTest, NoRunThatHoldsMeansZero) {
  RateSearch s;
  EXPECT_EQ(Confirm(
                800, [](double, int) { return false; }, 3, &s)
                .size(),
            3u);
  EXPECT_FALSE(s.confirmed);
  EXPECT_EQ(s.sustainable, 0);
  EXPECT_EQ(s.confirmation_runs, 3);
  RateSearch none;  // the search found nothing: nothing is run
  EXPECT_TRUE(Confirm(
                  0, [](double, int) { return true; }, 3, &none)
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

TEST(RateSearchTest, AProbesP99CoversItsWholeRun) {
  // 600,000 fast replies, then 20,000 slow ones: the slow 3 % are in p99.
  RunResult r = ProbeRun(620'000, 620'000, true);
  r.latency = LatencyRecorder();
  for (int i = 0; i < 600'000; ++i) r.latency.Record(std::chrono::microseconds(500));
  for (int i = 0; i < 20'000; ++i) r.latency.Record(std::chrono::milliseconds(40));
  const RateProbe p = JudgeProbe(620'000, r, kBoundUs);
  EXPECT_EQ(p.verdict, ProbeVerdict::kFailed) << p.why;
  EXPECT_GE(p.p99_us, 40'000);
}

}  // namespace
}  // namespace skiff::bench
