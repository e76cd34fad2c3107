// The JSON report's own figures of each run ("runs"): the medians, states,
// labels, contexts and counter kinds the results page shows, so that it needs
// no reader of Google Benchmark JSON besides run.cc.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compare/comparison.h"
#include "compare/report.h"
#include "compare/run.h"
#include "test/status_matchers.h"

namespace skiff::compare {
namespace {

using nlohmann::json;

Run Load(const std::string& name) {
  auto run = LoadRun(std::string(SKIFF_COMPARE_GOLDEN_DIR) + "/" + name);
  EXPECT_OK(run);
  return run.ok() ? *run : Run{};
}

json Report(const std::string& base, const std::string& head) {
  return json::parse(RenderJson(Compare(Load(base), Load(head), Settings{}), ReportLabels{}));
}

const json& Figures(const json& side, const std::string& name) {
  for (const json& b : side.at("benchmarks")) {
    if (b.at("name") == name) return b;
  }
  ADD_FAILURE() << "no figures for " << name;
  static const json kNone = json::object();
  return kNone;
}

TEST(ReportJsonTest, EachSideHasItsContextAndKinds) {
  const json doc = Report("hand_skipped.json", "hand_e2e_capped.json");
  EXPECT_EQ(doc["runs"]["base"]["context"]["host_name"], "hand-written");
  EXPECT_EQ(doc["runs"]["head"]["context"]["executable"], "build/release/bench/kv_bench");
  EXPECT_EQ(doc["runs"]["base"]["counter_kinds"]["statements_per_write"], "deterministic");
  EXPECT_EQ(doc["runs"]["head"]["counter_kinds"]["p99_us"], "info");
}

TEST(ReportJsonTest, MediansOverRepetitions) {
  const json doc = Report("hand_skipped.json", "hand_e2e_capped.json");
  const json& write = Figures(doc["runs"]["base"], "BM_Write/store:sqlite");
  EXPECT_EQ(write["state"], "ok");
  EXPECT_EQ(write["repetitions"], 5);
  EXPECT_DOUBLE_EQ(write["real_time_ns"].get<double>(), 12.1e6);  // of 11.9 .. 12.3 ms
  EXPECT_TRUE(write["items_per_second"].is_null());
  EXPECT_DOUBLE_EQ(write["counters"]["statements_per_write"].get<double>(), 7);

  const json& capped =
      Figures(doc["runs"]["head"], "set-small/pipelined/sqlite/commit/manual_time");
  EXPECT_DOUBLE_EQ(capped["real_time_ns"].get<double>(), 1362.8e6);
  EXPECT_DOUBLE_EQ(capped["items_per_second"].get<double>(), 25984.7373055474);
  EXPECT_EQ(capped["capped_repetitions"], 5);
  // The rates are fields of their own, not counters.
  EXPECT_FALSE(capped["counters"].contains("items_per_second"));
  EXPECT_TRUE(capped["counters"].contains("ops_per_s"));
  EXPECT_EQ(Figures(doc["runs"]["head"],
                    "get-hot/sequential/sqlite/commit/manual_time")["capped_repetitions"],
            0);
}

TEST(ReportJsonTest, SkippedAndErroredCasesHaveNoFigures) {
  const json doc = Report("hand_skipped.json", "real_errored3.json");
  const json& skipped = Figures(doc["runs"]["base"], "BM_Read/keys:1000");
  EXPECT_EQ(skipped["state"], "skipped");
  EXPECT_EQ(skipped["error_message"].get<std::string>().rfind("Skipped", 0), 0u);
  EXPECT_EQ(skipped["repetitions"], 0);
  EXPECT_TRUE(skipped["real_time_ns"].is_null());
  bool errored = false;
  for (const json& b : doc["runs"]["head"]["benchmarks"]) {
    if (b["state"] == "errored") {
      errored = true;
      EXPECT_FALSE(b["error_message"].get<std::string>().empty());
    }
  }
  EXPECT_TRUE(errored);
}

TEST(ReportJsonTest, LabelOfTheCase) {
  const json doc = Report("real_e2e_capped.json", "real_e2e_capped.json");
  EXPECT_EQ(Figures(doc["runs"]["head"],
                    "set-small/pipelined/memory/commit/iterations:1/manual_time")["label"],
            "memory commit, in-process");
}

// A run without a base gets its figures alone, and they are the figures a
// comparison with that run as HEAD carries, whatever the base.
TEST(ReportJsonTest, FiguresAloneAreTheComparisonsFigures) {
  for (const char* name : {"hand_skipped.json", "hand_e2e_capped.json", "real_errored3.json",
                           "real_aggregates_only.json", "hand_judged_head.json"}) {
    const json alone = json::parse(RenderFiguresJson(Load(name), name));
    EXPECT_EQ(alone["format"], "skiff-compare-figures/1") << name;
    EXPECT_EQ(alone["head"], name);
    EXPECT_EQ(alone["runs"]["head"], Report(name, name)["runs"]["head"]) << name;
    EXPECT_EQ(alone["runs"]["head"], Report("real_base.json", name)["runs"]["head"]) << name;
    // Nothing is judged: no verdicts, no base, no exit code.
    EXPECT_FALSE(alone["runs"].contains("base")) << name;
    for (const char* key : {"benchmarks", "judged_counters", "summary", "exit_code"}) {
      EXPECT_FALSE(alone.contains(key)) << name << " has " << key;
    }
  }
}

}  // namespace
}  // namespace skiff::compare
