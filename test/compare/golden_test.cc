// Verdicts and exit codes on golden inputs. real_*.json are Google Benchmark
// 1.7.1 outputs of a small throwaway benchmark (real_slower30, real_noise1pct
// and real_counter_changed are real runs with times scaled by 1.3 / 1.01 or
// one counter edited); hand_*.json and malformed_*.json are written by hand.
#include <string>

#include <gtest/gtest.h>

#include "compare/comparison.h"
#include "compare/mann_whitney.h"
#include "compare/merge.h"
#include "compare/report.h"
#include "compare/run.h"
#include "test/status_matchers.h"

namespace skiff::compare {
namespace {

std::string Golden(const std::string& name) {
  return std::string(SKIFF_COMPARE_GOLDEN_DIR) + "/" + name;
}

Run Load(const std::string& name) {
  auto run = LoadRun(Golden(name));
  EXPECT_OK(run);
  return run.ok() ? *run : Run{};
}

Comparison CompareFiles(const std::string& base, const std::string& head,
                        const Settings& settings = Settings{}) {
  return Compare(Load(base), Load(head), settings);
}

const TimeRow* Row(const Comparison& c, const std::string& name) {
  for (const auto& r : c.rows) {
    if (r.benchmark == name) return &r;
  }
  ADD_FAILURE() << "no row for " << name;
  return nullptr;
}

Verdict VerdictOf(const Comparison& c, const std::string& name) {
  const TimeRow* r = Row(c, name);
  return r ? r->verdict : Verdict::kSame;
}

TEST(GoldenTest, RealRunParses) {
  auto run = Load("real_base.json");
  ASSERT_EQ(run.benchmarks.size(), 2u);
  const BenchmarkResult* b = run.Find("BM_Sum/1000");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->real_ns.size(), 9u);  // repetitions, not the 4 aggregate rows
  EXPECT_EQ(b->time_unit, "us");
  EXPECT_NEAR(b->real_ns[0], 269.4991620480388, 1e-9);  // converted to ns
  EXPECT_FALSE(b->from_aggregates);
  // The kinds arrive as a string holding JSON (AddCustomContext).
  EXPECT_EQ(run.counter_kinds.at("statements_per_write"), CounterKind::kDeterministic);
  EXPECT_EQ(run.counter_kinds.at("p99_us"), CounterKind::kInfo);
  // Hand-written files give the kinds as an object.
  EXPECT_EQ(Load("hand_base.json").counter_kinds.at("bytes_per_push"), CounterKind::kDeterministic);
}

TEST(GoldenTest, IdenticalRunsAreAllClear) {
  Comparison c = CompareFiles("real_base.json", "real_base.json");
  ASSERT_EQ(c.rows.size(), 2u);
  for (const auto& r : c.rows) EXPECT_EQ(r.verdict, Verdict::kSame) << r.benchmark;
  EXPECT_TRUE(c.counter_changes.empty());
  EXPECT_EQ(c.deterministic_checked, 2u);
  EXPECT_EQ(c.info_counters.size(), 2u);  // p99_us, shown not judged
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
}

TEST(GoldenTest, RerunOfTheSameCodeIsSame) {
  Comparison c = CompareFiles("real_base.json", "real_rerun.json");
  EXPECT_EQ(VerdictOf(c, "BM_Sum/1000"), Verdict::kSame);
  EXPECT_EQ(VerdictOf(c, "BM_Sum/4000"), Verdict::kSame);
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
}

TEST(GoldenTest, ThirtyPercentSlowdownOverNineRepetitions) {
  Comparison c = CompareFiles("real_base.json", "real_slower30.json");
  for (const char* name : {"BM_Sum/1000", "BM_Sum/4000"}) {
    const TimeRow* r = Row(c, name);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->verdict, Verdict::kSlower);
    EXPECT_NEAR(*r->diff_pct, 30.0, 1e-6);
    EXPECT_LT(*r->p_value, 0.001);
  }
  // Times alone never fail a run...
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
  // ...unless asked to.
  Settings strict;
  strict.fail_on_slower = true;
  EXPECT_EQ(CompareFiles("real_base.json", "real_slower30.json", strict).exit_code,
            ExitCode::kSlower);
}

TEST(GoldenTest, SpeedupIsFaster) {
  Comparison c = CompareFiles("real_slower30.json", "real_base.json");
  EXPECT_EQ(VerdictOf(c, "BM_Sum/1000"), Verdict::kFaster);
  EXPECT_EQ(VerdictOf(c, "BM_Sum/4000"), Verdict::kFaster);
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
}

TEST(GoldenTest, OnePercentInNoiseIsSame) {
  Comparison c = CompareFiles("real_rerun.json", "real_noise1pct.json");
  for (const char* name : {"BM_Sum/1000", "BM_Sum/4000"}) {
    const TimeRow* r = Row(c, name);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->verdict, Verdict::kSame);
    EXPECT_NEAR(*r->diff_pct, 1.0, 1e-6);
    // The rank test alone sees a shift; the 5 % threshold keeps it "same".
    EXPECT_LT(*r->p_value, 0.05);
  }
}

TEST(GoldenTest, ChangedDeterministicCounter) {
  Comparison c = CompareFiles("real_base.json", "real_counter_changed.json");
  ASSERT_EQ(c.counter_changes.size(), 1u);
  EXPECT_EQ(c.counter_changes[0].benchmark, "BM_Sum/4000");
  EXPECT_EQ(c.counter_changes[0].counter, "statements_per_write");
  EXPECT_EQ(c.counter_changes[0].base, "3");
  EXPECT_EQ(c.counter_changes[0].head, "4");
  EXPECT_EQ(c.exit_code, ExitCode::kCounterChanged);
}

TEST(GoldenTest, CounterThatVariesOrDisappears) {
  Comparison c = CompareFiles("hand_base.json", "hand_counter_varies.json");
  ASSERT_EQ(c.counter_changes.size(), 2u);
  EXPECT_EQ(c.counter_changes[0].benchmark, "BM_Write/store:sqlite");
  EXPECT_EQ(c.counter_changes[0].head, "7..8");
  EXPECT_EQ(c.counter_changes[1].counter, "bytes_per_push");
  EXPECT_EQ(c.counter_changes[1].head, "absent");
  EXPECT_EQ(c.exit_code, ExitCode::kCounterChanged);
  // The same times in seconds instead of milliseconds are the same times.
  EXPECT_EQ(VerdictOf(c, "BM_Write/store:sqlite"), Verdict::kSame);
  EXPECT_NEAR(*Row(c, "BM_Write/store:sqlite")->diff_pct, 0.0, 1e-9);
}

TEST(GoldenTest, ErroredBenchmarkInHead) {
  Comparison c = CompareFiles("real_ok3.json", "real_errored3.json");
  ASSERT_EQ(c.errored.size(), 1u);
  EXPECT_EQ(c.errored[0].benchmark, "BM_Fails");
  EXPECT_EQ(c.errored[0].side, Side::kHead);
  EXPECT_EQ(c.errored[0].message, "setup failed: no store");
  // "skipped: ..." messages are skips, on both sides, and do not fail.
  EXPECT_EQ(c.skipped.size(), 2u);
  // Three repetitions per side cannot reach p < 0.05.
  EXPECT_EQ(VerdictOf(c, "BM_Sum/1000"), Verdict::kTooFewRepetitions);
  EXPECT_EQ(c.exit_code, ExitCode::kErrored);
}

TEST(GoldenTest, ErroredOnlyInBaseDoesNotFail) {
  Comparison c = CompareFiles("hand_base_errored.json", "hand_base.json");
  ASSERT_EQ(c.errored.size(), 1u);
  EXPECT_EQ(c.errored[0].side, Side::kBase);
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
}

TEST(GoldenTest, SkippedInHeadIsListedNotFailed) {
  Comparison c = CompareFiles("hand_base.json", "hand_skipped.json");
  ASSERT_EQ(c.skipped.size(), 1u);
  EXPECT_EQ(c.skipped[0].benchmark, "BM_Read/keys:1000");
  EXPECT_EQ(c.skipped[0].side, Side::kHead);
  EXPECT_TRUE(c.errored.empty());
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
}

TEST(GoldenTest, AddedAndRemovedBenchmarks) {
  Comparison c = CompareFiles("hand_base.json", "hand_added_removed.json");
  ASSERT_EQ(c.added.size(), 1u);
  EXPECT_EQ(c.added[0], "BM_New/rows:10");
  ASSERT_EQ(c.removed.size(), 1u);
  EXPECT_EQ(c.removed[0], "BM_Old");
  EXPECT_EQ(c.exit_code, ExitCode::kErrored);
  // Only added, nothing removed: not a failure.
  EXPECT_EQ(CompareFiles("hand_added_removed.json", "hand_added_removed.json").exit_code,
            ExitCode::kOk);
}

TEST(GoldenTest, UnstableWhenSpreadIsHigh) {
  Comparison c = CompareFiles("hand_base.json", "hand_unstable.json");
  EXPECT_EQ(VerdictOf(c, "BM_Write/store:sqlite"), Verdict::kUnstable);
  EXPECT_EQ(VerdictOf(c, "BM_Read/keys:1000"), Verdict::kSlower);
  EXPECT_EQ(VerdictOf(c, "BM_Old"), Verdict::kSame);
}

TEST(GoldenTest, OneRepetitionIsTooFew) {
  Comparison c = CompareFiles("real_one_rep_base.json", "real_one_rep_head.json");
  const TimeRow* r = Row(c, "BM_Sum/1000");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->verdict, Verdict::kTooFewRepetitions);
  EXPECT_NE(r->note().find("1 vs 1"), std::string::npos);
  EXPECT_FALSE(r->p_value.has_value());
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
}

TEST(GoldenTest, AggregatesOnlyRunUsesMedianRows) {
  auto run = Load("real_aggregates_only.json");
  const BenchmarkResult* b = run.Find("BM_Sum/1000");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->from_aggregates);
  EXPECT_EQ(b->real_ns.size(), 1u);
  Comparison c = Compare(run, run, Settings{});
  EXPECT_EQ(VerdictOf(c, "BM_Sum/1000"), Verdict::kTooFewRepetitions);
  EXPECT_NE(Row(c, "BM_Sum/1000")->note().find("aggregates only"), std::string::npos);
  EXPECT_TRUE(c.counter_changes.empty());
}

// A scenario cut short by its wall-time budget has the budget as its time,
// whatever its speed: every HEAD run here was capped after 64.6 % fewer
// operations, and per iteration the change is +0.9 %, "same". Its rate
// (items_per_second) is what shows the slowdown.
TEST(GoldenTest, CappedScenarioIsJudgedByItsRate) {
  const auto base = Load("hand_e2e_uncapped.json");
  const auto head = Load("hand_e2e_capped.json");
  const std::string name = "set-small/pipelined/sqlite/commit/manual_time";
  const TimeRow per_iteration =
      JudgeTimes(name, base.Find(name)->real_ns, head.Find(name)->real_ns, Settings{});
  EXPECT_EQ(per_iteration.verdict, Verdict::kSame);
  EXPECT_NEAR(*per_iteration.diff_pct, 0.9, 0.1);

  Comparison c = Compare(base, head, Settings{});
  const TimeRow* r = Row(c, name);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->per_item);
  EXPECT_EQ(r->verdict, Verdict::kSlower);
  EXPECT_GT(*r->diff_pct, 150);  // 13.5 us per operation became 38.5 us
  EXPECT_NE(r->note().find("cut short by its time budget in HEAD (5 of 5 runs)"), std::string::npos)
      << r->note();
  // The uncapped case beside it is judged the same way and unchanged.
  EXPECT_EQ(VerdictOf(c, "get-hot/sequential/sqlite/commit/manual_time"), Verdict::kSame);
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
  EXPECT_NE(c.exit_reason.find("1 benchmark(s) slower"), std::string::npos) << c.exit_reason;
  Settings strict;
  strict.fail_on_slower = true;
  EXPECT_EQ(Compare(base, head, strict).exit_code, ExitCode::kSlower);
}

// The same case as the suite writes it now (real runs of kv_bench: HEAD
// with 2 requests in flight instead of 32 and a 300 ms cap, so every HEAD run
// was capped): the time is per operation, so it shows the slowdown by
// itself, while the scenarios' wall time (wall_s) would call HEAD faster.
TEST(GoldenTest, SuiteReportsTimePerOperation) {
  const auto base = Load("real_e2e_uncapped.json");
  const auto head = Load("real_e2e_capped.json");
  const std::string name = "set-small/pipelined/memory/commit/iterations:1/manual_time";
  Comparison c = Compare(base, head, Settings{});
  const TimeRow* r = Row(c, name);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->per_item);  // no rate in the row: its time is per operation already
  EXPECT_EQ(r->verdict, Verdict::kSlower);
  EXPECT_NE(r->note().find("cut short by its time budget in HEAD (5 of 5 runs)"),
            std::string::npos);
  // These runs shared the machine with a build (other_cpu_pct about 150):
  // said, not hidden.
  EXPECT_NE(r->note().find("ran beside other load"), std::string::npos) << r->note();
  EXPECT_EQ(CompareFiles("hand_e2e_uncapped.json", "hand_e2e_capped.json")
                .rows[0]
                .note()
                .find("ran beside other load"),
            std::string::npos);
  const TimeRow by_wall = JudgeTimes(name, base.Find(name)->counters.at("wall_s"),
                                     head.Find(name)->counters.at("wall_s"), Settings{});
  EXPECT_LT(*by_wall.diff_pct, -50);
}

// "All clear" says how much it rests on, and a note shared by many rows is
// one line.
TEST(GoldenTest, AllClearSaysHowMuchWasJudged) {
  EXPECT_EQ(CompareFiles("real_base.json", "real_rerun.json").exit_reason,
            "all clear: 2 compared (2 same)");
  Comparison c = CompareFiles("hand_noisy_base.json", "hand_noisy_head.json");
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
  EXPECT_EQ(c.exit_reason, "no verdict: 8 compared (8 unstable)");
  const std::vector<NoteGroup> notes = GroupNotes(c);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].benchmarks.size(), 8u);
  Comparison mixed = CompareFiles("hand_base.json", "hand_unstable.json");
  EXPECT_NE(mixed.exit_reason.find("3 compared (1 same, 1 slower, 1 unstable)"), std::string::npos)
      << mixed.exit_reason;
}

// The hint names a repetition count that can reach a verdict.
TEST(GoldenTest, RepetitionHintCanReachAVerdict) {
  Comparison c = CompareFiles("real_ok3.json", "real_errored3.json");
  const TimeRow* r = Row(c, "BM_Sum/1000");
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r->note().find("run --benchmark_repetitions=4 or more"), std::string::npos)
      << r->note();
  EXPECT_LT(SmallestPValue(4, 4), Settings{}.alpha);
  Settings strict;
  strict.alpha = 0.01;
  EXPECT_EQ(RepetitionsForVerdict(strict), 5);
  EXPECT_LT(SmallestPValue(5, 5), strict.alpha);
  EXPECT_GE(SmallestPValue(4, 4), strict.alpha);
}

// Two stores of one run, side by side (--filters): paired by name with the
// store replaced by "*"; their counters differ by nature and fail nothing.
TEST(GoldenTest, TwoStoresWithinOneRun) {
  auto sides = SplitRun(Load("hand_two_stores.json"), "sqlite", "postgres");
  ASSERT_OK(sides);
  Settings within;
  within.within_run = true;
  Comparison c = Compare(sides->first, sides->second, within);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(VerdictOf(c, "BM_WriteOne/*/real_time"), Verdict::kSlower);
  EXPECT_NEAR(*Row(c, "BM_WriteOne/*/real_time")->diff_pct, 740, 1);
  EXPECT_EQ(c.counter_changes.size(), 2u);  // statements_per_write 1 vs 2
  EXPECT_EQ(c.exit_code, ExitCode::kOk);
  EXPECT_FALSE(SplitRun(Load("hand_two_stores.json"), "(", "postgres").ok());
}

TEST(GoldenTest, MalformedFilesAreBadInput) {
  for (const char* name :
       {"malformed_truncated.json", "malformed_not_object.json", "malformed_no_benchmarks.json",
        "malformed_wrong_types.json", "malformed_name_not_string.json", "malformed_bad_kind.json",
        "malformed_time_unit.json", "malformed_empty.json", "no_such_file.json"}) {
    SCOPED_TRACE(name);
    auto run = LoadRun(Golden(name));
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.status().code(), StatusCode::kBadRequest);
    // The message names the file, so a user knows which input to fix.
    EXPECT_NE(run.status().message().find(name), std::string::npos) << run.status();
  }
  EXPECT_FALSE(LoadRun(SKIFF_COMPARE_GOLDEN_DIR).ok());  // a directory
}

TEST(ParseRunTest, HostileInputsFailCleanly) {
  EXPECT_FALSE(ParseRun(std::string(100000, '[') + std::string(100000, ']'), "deep").ok());
  EXPECT_FALSE(ParseRun(R"({"benchmarks":[1]})", "x").ok());
  EXPECT_FALSE(ParseRun(R"({"benchmarks":[{"name":"a"}]})", "x").ok());  // no times
  EXPECT_FALSE(ParseRun(R"({"benchmarks":[{"name":"a","real_time":1,"cpu_time":1,)"
                        R"("run_type":"bogus"}]})",
                        "x")
                   .ok());
  EXPECT_FALSE(ParseRun(R"({"context":[],"benchmarks":[]})", "x").ok());
  EXPECT_FALSE(
      ParseRun(R"({"context":{"skiff_counter_kinds":"{oops"},"benchmarks":[]})", "x").ok());
  EXPECT_FALSE(ParseRun(R"({"benchmarks":[{"name":"a","real_time":1,"cpu_time":1,)"
                        R"("error_occurred":"yes"}]})",
                        "x")
                   .ok());
  // Deep values inside an otherwise valid run: refused before any copy could
  // recurse once per level.
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  EXPECT_FALSE(
      ParseRun(R"({"context":{"skiff_counter_kinds":)" + deep + R"(},"benchmarks":[]})", "x").ok());
  EXPECT_FALSE(ParseRun(R"({"benchmarks":[{"name":"x","deep":)" + deep + "}]}", "x").ok());
  EXPECT_FALSE(MergeRuns({{"a", R"({"benchmarks":[{"name":"x","deep":)" + deep + "}]}"}}).ok());
  auto empty = ParseRun(R"({"benchmarks":[]})", "x");
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->benchmarks.empty());
}

}  // namespace
}  // namespace skiff::compare
