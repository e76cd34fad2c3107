#include "compare/comparison.h"

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compare/run.h"
#include "test/status_matchers.h"

namespace skiff::compare {
namespace {

std::vector<double> Scaled(const std::vector<double>& v, double factor) {
  std::vector<double> out;
  for (double x : v) out.push_back(x * factor);
  return out;
}

// Nine samples with about 0.6 % spread.
const std::vector<double> kSteady = {100.0, 100.4, 99.6, 100.2, 99.8, 100.6, 99.4, 100.1, 99.9};

TEST(JudgeTimesTest, ClearSlowdownIsSlower) {
  TimeRow r = JudgeTimes("x", kSteady, Scaled(kSteady, 1.3), Settings{});
  EXPECT_EQ(r.verdict, Verdict::kSlower);
  ASSERT_TRUE(r.diff_pct.has_value());
  EXPECT_NEAR(*r.diff_pct, 30.0, 1e-9);
  ASSERT_TRUE(r.p_value.has_value());
  EXPECT_LT(*r.p_value, 0.001);
}

TEST(JudgeTimesTest, ClearSpeedupIsFaster) {
  EXPECT_EQ(JudgeTimes("x", kSteady, Scaled(kSteady, 0.8), Settings{}).verdict, Verdict::kFaster);
}

TEST(JudgeTimesTest, SignificantButBelowThresholdIsSame) {
  TimeRow r = JudgeTimes("x", kSteady, Scaled(kSteady, 1.02), Settings{});
  ASSERT_TRUE(r.p_value.has_value());
  EXPECT_LT(*r.p_value, 0.05);  // the test alone would call it a change
  EXPECT_EQ(r.verdict, Verdict::kSame);
  Settings strict;
  strict.threshold_pct = 1;
  EXPECT_EQ(JudgeTimes("x", kSteady, Scaled(kSteady, 1.02), strict).verdict, Verdict::kSlower);
}

TEST(JudgeTimesTest, LargeMedianChangeWithoutSignificanceIsSame) {
  // Medians differ by 6 % but the samples overlap completely.
  std::vector<double> base = {100, 106, 94, 103, 97};
  std::vector<double> head = {106, 100, 97, 103, 112};
  Settings loose;
  loose.max_cv_pct = 50;
  TimeRow r = JudgeTimes("x", base, head, loose);
  ASSERT_TRUE(r.p_value.has_value());
  EXPECT_GE(*r.p_value, 0.05);
  EXPECT_EQ(r.verdict, Verdict::kSame);
}

TEST(JudgeTimesTest, SpreadAboveMaxCvIsUnstable) {
  std::vector<double> noisy = {100, 130, 80, 120, 90, 140, 70, 110, 95};
  TimeRow r = JudgeTimes("x", kSteady, noisy, Settings{});
  EXPECT_EQ(r.verdict, Verdict::kUnstable);
  EXPECT_NE(r.note().find("HEAD"), std::string::npos);
  Settings tolerant;
  tolerant.max_cv_pct = 50;
  EXPECT_NE(JudgeTimes("x", kSteady, noisy, tolerant).verdict, Verdict::kUnstable);
}

TEST(JudgeTimesTest, ChangeFarBeyondTheNoiseIsJudgedAnyway) {
  // CV about 15 % on both sides, but HEAD is ten times slower: more than
  // kNoiseMultiple times the spread, so "unstable" would hide a real finding.
  std::vector<double> noisy = {100, 130, 80, 120, 90, 110, 95, 105, 85};
  TimeRow r = JudgeTimes("x", noisy, Scaled(noisy, 10), Settings{});
  EXPECT_EQ(r.verdict, Verdict::kSlower);
  // Twice as slow with the same noise is within 3 x 15 %: still unstable.
  EXPECT_EQ(JudgeTimes("x", noisy, Scaled(noisy, 1.3), Settings{}).verdict, Verdict::kUnstable);
}

TEST(JudgeTimesTest, TooFewRepetitions) {
  std::vector<double> two = {100, 101};
  EXPECT_EQ(JudgeTimes("x", two, Scaled(two, 2), Settings{}).verdict, Verdict::kTooFewRepetitions);
  // Three per side is enough by count, but the exact test cannot go below
  // p = 0.1 there, so no verdict is possible at alpha 0.05.
  std::vector<double> three = {100, 101, 99};
  TimeRow r = JudgeTimes("x", three, Scaled(three, 2), Settings{});
  EXPECT_EQ(r.verdict, Verdict::kTooFewRepetitions);
  EXPECT_NE(r.note().find("cannot reach"), std::string::npos);
  std::vector<double> four = {100, 101, 99, 100.5};
  EXPECT_EQ(JudgeTimes("x", four, Scaled(four, 2), Settings{}).verdict, Verdict::kSlower);
  Settings more;
  more.min_repetitions = 5;
  EXPECT_EQ(JudgeTimes("x", four, Scaled(four, 2), more).verdict, Verdict::kTooFewRepetitions);
}

TEST(JudgeTimesTest, ZeroBaseTime) {
  std::vector<double> zeros(5, 0.0);
  TimeRow same = JudgeTimes("x", zeros, zeros, Settings{});
  EXPECT_EQ(same.verdict, Verdict::kSame);
  ASSERT_TRUE(same.diff_pct.has_value());
  EXPECT_EQ(*same.diff_pct, 0);
  TimeRow grew = JudgeTimes("x", zeros, {1, 1.01, 0.99, 1, 1}, Settings{});
  EXPECT_FALSE(grew.diff_pct.has_value());
  EXPECT_EQ(grew.verdict, Verdict::kSlower);
}

TEST(SummarizeTest, MedianAndCoefficientOfVariation) {
  SideStats s = Summarize({1, 2, 3, 4});
  EXPECT_EQ(s.samples, 4u);
  EXPECT_DOUBLE_EQ(s.median_ns, 2.5);
  ASSERT_TRUE(s.cv_pct.has_value());
  // Sample standard deviation of 1..4 is sqrt(5/3); the mean is 2.5.
  EXPECT_NEAR(*s.cv_pct, 51.63977794943222, 1e-9);
  EXPECT_FALSE(Summarize({7}).cv_pct.has_value());
  EXPECT_EQ(Summarize({}).samples, 0u);
}

TEST(VerdictNameTest, Names) {
  EXPECT_EQ(VerdictName(Verdict::kSame), "same");
  EXPECT_EQ(VerdictName(Verdict::kFaster), "faster");
  EXPECT_EQ(VerdictName(Verdict::kSlower), "slower");
  EXPECT_EQ(VerdictName(Verdict::kUnstable), "unstable");
  EXPECT_EQ(VerdictName(Verdict::kTooFewRepetitions), "too few repetitions");
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// A run of one benchmark "B" with five samples, built from text so the
// priority cases below need no extra files.
Run MakeRun(double time, double counter, bool errored, const std::string& extra_name = "") {
  std::string rows;
  for (int i = 0; i < 5; ++i) {
    if (!rows.empty()) rows += ",";
    rows += R"({"name":"B","run_name":"B","run_type":"iteration","real_time":)" +
            Num(time + i * 0.01) + R"(,"cpu_time":1,"time_unit":"ns","det":)" + Num(counter) +
            (errored ? R"(,"error_occurred":true,"error_message":"boom")" : "") + "}";
  }
  if (!extra_name.empty()) {
    rows += R"(,{"name":")" + extra_name + R"(","real_time":1,"cpu_time":1})";
  }
  std::string text = R"({"context":{"skiff_counter_kinds":"{\"det\":\"deterministic\"}"},)"
                     R"("benchmarks":[)" +
                     rows + "]}";
  auto run = ParseRun(text, "test");
  EXPECT_OK(run);
  return run.ok() ? *run : Run{};
}

TEST(ExitCodeTest, PriorityOrder) {
  Settings fail_on_slower;
  fail_on_slower.fail_on_slower = true;
  auto base = MakeRun(100, 3, false, "Gone");
  // Slower only: 0 by default, 4 with --fail-on-slower.
  EXPECT_EQ(Compare(MakeRun(100, 3, false), MakeRun(200, 3, false), Settings{}).exit_code,
            ExitCode::kOk);
  EXPECT_EQ(Compare(MakeRun(100, 3, false), MakeRun(200, 3, false), fail_on_slower).exit_code,
            ExitCode::kSlower);
  // A counter change outranks a slowdown.
  EXPECT_EQ(Compare(MakeRun(100, 3, false), MakeRun(200, 4, false), fail_on_slower).exit_code,
            ExitCode::kCounterChanged);
  // A removed benchmark outranks a counter change.
  EXPECT_EQ(Compare(base, MakeRun(200, 4, false), fail_on_slower).exit_code, ExitCode::kErrored);
  // An error in HEAD outranks everything the comparison finds.
  EXPECT_EQ(Compare(MakeRun(100, 3, false), MakeRun(200, 4, true), fail_on_slower).exit_code,
            ExitCode::kErrored);
  // An error in BASE alone is reported but does not fail.
  Comparison c = Compare(MakeRun(100, 3, true), MakeRun(100, 3, false), fail_on_slower);
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
  ASSERT_EQ(c.errored.size(), 1u);
  EXPECT_EQ(c.errored[0].side, Side::kBase);
}

TEST(CounterTest, EpsilonAbsorbsPrintingNoise) {
  Comparison c = Compare(MakeRun(100, 7, false), MakeRun(100, 7.000000000001, false), Settings{});
  EXPECT_TRUE(c.counter_changes.empty());
  EXPECT_EQ(c.deterministic_checked, 1u);
  c = Compare(MakeRun(100, 7, false), MakeRun(100, 7.001, false), Settings{});
  ASSERT_EQ(c.counter_changes.size(), 1u);
  EXPECT_EQ(c.counter_changes[0].base, "7");
  EXPECT_EQ(c.counter_changes[0].head, "7.001");
}

}  // namespace
}  // namespace skiff::compare
