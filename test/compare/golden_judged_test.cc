// The rules added for judged counters, fixed-window cases, kind changes and
// the smallest detectable change, on hand-written golden runs
// (golden/hand_judged_*, hand_window_*, hand_kind_*: five repetitions each).
#include <string>

#include <gtest/gtest.h>

#include "compare/comparison.h"
#include "compare/report.h"
#include "compare/run.h"
#include "test/status_matchers.h"

namespace skiff::compare {
namespace {

compare::Run Load(const std::string& name) {
  auto run = LoadRun(std::string(SKIFF_COMPARE_GOLDEN_DIR) + "/" + name);
  EXPECT_OK(run);
  return run.ok() ? *run : compare::Run{};
}

const TimeRow* Judged(const Comparison& c, const std::string& counter) {
  for (const TimeRow& r : c.judged) {
    if (r.counter == counter) return &r;
  }
  ADD_FAILURE() << "no judged row for " << counter;
  return nullptr;
}

TEST(GoldenJudgedTest, KindsParse) {
  compare::Run run = Load("hand_judged_base.json");
  EXPECT_EQ(run.counter_kinds.at("server_cpu_us_per_op"), CounterKind::kJudgedLower);
  EXPECT_EQ(run.counter_kinds.at("sustainable_ops_per_s"), CounterKind::kJudgedHigher);
}

// The drill's "+3 us of CPU per request" and "+1.5 KB per document": the time
// stays in its noise, the server's CPU per reply and its memory do not.
TEST(GoldenJudgedTest, ResourceRegressionsAreWorseWhileTimeIsNot) {
  Comparison c = Compare(Load("hand_judged_base.json"), Load("hand_judged_head.json"), Settings{});
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_NE(c.rows[0].verdict, Verdict::kSlower);
  ASSERT_EQ(c.judged.size(), 3u);
  const TimeRow* cpu = Judged(c, "server_cpu_us_per_op");
  const TimeRow* rss = Judged(c, "server_rss_mib");
  const TimeRow* rate = Judged(c, "sustainable_ops_per_s");
  ASSERT_TRUE(cpu && rss && rate);
  EXPECT_EQ(cpu->verdict, Verdict::kSlower);
  EXPECT_EQ(RowVerdictName(*cpu), "worse");
  EXPECT_NEAR(*cpu->diff_pct, 23, 0.5);
  EXPECT_EQ(RowVerdictName(*rss), "worse");
  // Higher is better: a lower rate is worse, not "faster".
  EXPECT_TRUE(rate->higher_is_better);
  EXPECT_EQ(RowVerdictName(*rate), "worse");
  // Flagged, not failed, unless asked.
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
  EXPECT_NE(c.exit_reason.find("3 judged counter(s) worse"), std::string::npos) << c.exit_reason;
  Settings strict;
  strict.fail_on_slower = true;
  EXPECT_EQ(Compare(Load("hand_judged_base.json"), Load("hand_judged_head.json"), strict).exit_code,
            ExitCode::kSlower);
  const std::string table = RenderTable(c, {});
  EXPECT_NE(table.find("Judged counters"), std::string::npos);
  EXPECT_NE(table.find("worse"), std::string::npos);
}

TEST(GoldenJudgedTest, SameRunTwiceFlagsNothingAndSaysWhatItCouldSee) {
  Comparison c = Compare(Load("hand_judged_base.json"), Load("hand_judged_base.json"), Settings{});
  for (const TimeRow& r : c.judged) EXPECT_EQ(r.verdict, Verdict::kSame) << r.counter;
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
  // The CPU figure's spread is under 1 %: the threshold (5 %) is what limits it.
  const TimeRow* cpu = Judged(c, "server_cpu_us_per_op");
  ASSERT_TRUE(cpu && cpu->detectable_pct);
  EXPECT_DOUBLE_EQ(*cpu->detectable_pct, 5);
  // The time's spread (6 % CV, 15 % range) is what limits the time row.
  ASSERT_TRUE(c.rows[0].detectable_pct);
  EXPECT_GT(*c.rows[0].detectable_pct, 14);
  std::vector<Detectable> seen = SummarizeDetectable(c);
  ASSERT_EQ(seen.size(), 4u);  // time and three counters
  EXPECT_EQ(seen[0].measure, "time");
  EXPECT_NE(RenderTable(c, {}).find("What this comparison can see"), std::string::npos);
}

// A case that measures a fixed window is judged by its rate: 90 % fewer
// replies in the same 3 s is slower, not "same".
TEST(GoldenJudgedTest, FixedWindowCaseIsJudgedPerReply) {
  Comparison c = Compare(Load("hand_window_base.json"), Load("hand_window_head.json"), Settings{});
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_TRUE(c.rows[0].per_item);
  EXPECT_EQ(c.rows[0].verdict, Verdict::kSlower);
  EXPECT_NEAR(*c.rows[0].diff_pct, 900, 1);
}

// Re-declaring a deterministic counter as info cannot silence it: it is
// judged as the stricter kind, and the kind change itself is listed.
TEST(GoldenJudgedTest, KindChangeIsFlaggedAndJudgedStrictly) {
  Comparison c = Compare(Load("hand_kind_base.json"), Load("hand_kind_head.json"), Settings{});
  ASSERT_EQ(c.kind_changes.size(), 1u);
  EXPECT_EQ(c.kind_changes[0].counter, "statements_per_read");
  EXPECT_EQ(c.kind_changes[0].base, CounterKind::kDeterministic);
  EXPECT_EQ(c.kind_changes[0].head, CounterKind::kInfo);
  ASSERT_EQ(c.counter_changes.size(), 1u);
  EXPECT_EQ(c.exit_code, ExitCode::kCounterChanged);
  EXPECT_NE(c.exit_reason.find("judged less than in BASE"), std::string::npos) << c.exit_reason;
  Comparison same = Compare(Load("hand_kind_head.json"), Load("hand_kind_head.json"), Settings{});
  EXPECT_TRUE(same.kind_changes.empty());
  EXPECT_EQ(same.exit_code, ExitCode::kOk);
}

// A kind change alone, same values: judging a counter less than BASE did
// fails (it could hide the next regression); judging it more, as when an
// info figure becomes judged, is listed only.
TEST(GoldenJudgedTest, LooseningAKindFailsTighteningIsListed) {
  Comparison loosened =
      Compare(Load("hand_judged_base.json"), Load("hand_judged_base_cpu_info.json"), Settings{});
  ASSERT_EQ(loosened.kind_changes.size(), 1u);
  EXPECT_EQ(loosened.exit_code, ExitCode::kCounterChanged);
  // Still judged as the stricter kind: the row is there, and same.
  const TimeRow* cpu = Judged(loosened, "server_cpu_us_per_op");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->verdict, Verdict::kSame);
  Comparison tightened =
      Compare(Load("hand_judged_base_cpu_info.json"), Load("hand_judged_base.json"), Settings{});
  ASSERT_EQ(tightened.kind_changes.size(), 1u);
  EXPECT_EQ(tightened.exit_code, ExitCode::kOk) << tightened.exit_reason;
}

// A judged figure that HEAD stops reporting is a row with no verdict, not
// a silent info line.
TEST(GoldenJudgedTest, JudgedCounterMissingInHeadIsNoted) {
  compare::Run head = Load("hand_judged_base.json");
  for (BenchmarkResult& b : head.benchmarks) b.counters.erase("server_rss_mib");
  Comparison c = Compare(Load("hand_judged_base.json"), head, Settings{});
  const TimeRow* rss = Judged(c, "server_rss_mib");
  ASSERT_TRUE(rss);
  EXPECT_EQ(rss->verdict, Verdict::kTooFewRepetitions);
  EXPECT_NE(rss->note().find("missing in HEAD"), std::string::npos);
}

TEST(DetectableTest, FollowsTheSpreadAndTheNoiseRule) {
  Settings s;  // threshold 5 %, max CV 5 %
  // Too few samples for any verdict.
  EXPECT_FALSE(DetectablePct({1, 1}, {1, 1}, s));
  // Steady samples: the threshold.
  EXPECT_DOUBLE_EQ(*DetectablePct({100, 100, 100, 100, 100}, {100, 100, 100, 100, 100}, s), 5);
  // Nothing to see in zeros.
  EXPECT_FALSE(DetectablePct({0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, s));
  // With five samples a side the test needs the sets all but separated: a
  // 10 % range needs about a 10 % shift.
  const auto spread = DetectablePct({95, 100, 105, 100, 100}, {100, 100, 100, 100, 100}, s);
  ASSERT_TRUE(spread);
  EXPECT_GT(*spread, 5);
  EXPECT_LT(*spread, 11);
  // More samples see more: fifteen with the same range need less of a shift.
  const auto more =
      DetectablePct({95, 100, 105, 100, 100, 96, 104, 98, 102, 100, 97, 103, 99, 101, 100},
                    {100, 100, 100, 100, 100}, s);
  ASSERT_TRUE(more);
  EXPECT_LT(*more, *spread);
  // A noisy side (CV above 5 %) needs three times its CV.
  const auto noisy = DetectablePct({80, 100, 120, 90, 110}, {100, 100, 100, 100, 100}, s);
  ASSERT_TRUE(noisy);
  EXPECT_GT(*noisy, 3 * 15);
}

}  // namespace
}  // namespace skiff::compare
