#include "compare/merge.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compare/run.h"
#include "test/status_matchers.h"

namespace skiff::compare {
namespace {

using nlohmann::json;

std::string Round(double t, const std::string& kinds) {
  json doc;
  doc["context"] = {{"executable", "x_bench"}, {"skiff_counter_kinds", kinds}};
  doc["benchmarks"] = json::array();
  for (int i = 0; i < 2; ++i) {
    doc["benchmarks"].push_back({{"name", "B"},
                                 {"run_name", "B"},
                                 {"run_type", "iteration"},
                                 {"repetitions", 2},
                                 {"repetition_index", i},
                                 {"real_time", t + i},
                                 {"cpu_time", t},
                                 {"time_unit", "ns"},
                                 {"det", 3}});
  }
  doc["benchmarks"].push_back({{"name", "B_median"},
                               {"run_name", "B"},
                               {"run_type", "aggregate"},
                               {"aggregate_name", "median"},
                               {"real_time", t},
                               {"cpu_time", t},
                               {"time_unit", "ns"}});
  // Only aggregates for A (run with --benchmark_report_aggregates_only).
  doc["benchmarks"].push_back({{"name", "A_median"},
                               {"run_name", "A"},
                               {"run_type", "aggregate"},
                               {"aggregate_name", "median"},
                               {"real_time", t * 2},
                               {"cpu_time", t},
                               {"time_unit", "ns"}});
  return doc.dump();
}

TEST(MergeTest, JoinsRepetitionsAcrossRounds) {
  auto merged = MergeRuns({{"r1", Round(10, R"({"det":"deterministic"})")},
                           {"r2", Round(20, R"({"other":"info"})")},
                           {"r3", Round(30, R"({"det":"info"})")}});
  ASSERT_OK(merged);
  json doc = json::parse(*merged);
  EXPECT_EQ(doc["context"]["skiff_merged_inputs"], 3);
  EXPECT_EQ(doc["context"]["executable"], "x_bench");
  // Kinds united; "deterministic" wins the disagreement on det.
  EXPECT_EQ(doc["context"]["skiff_counter_kinds"]["det"], "deterministic");
  EXPECT_EQ(doc["context"]["skiff_counter_kinds"]["other"], "info");

  int b_rows = 0;
  for (const json& row : doc["benchmarks"]) {
    if (row["run_name"] != "B") continue;
    EXPECT_EQ(row["run_type"], "iteration");  // B's per-round aggregates dropped
    EXPECT_EQ(row["repetition_index"], b_rows);
    EXPECT_EQ(row["repetitions"], 6);
    ++b_rows;
  }
  EXPECT_EQ(b_rows, 6);

  auto run = ParseRun(*merged, "merged");
  ASSERT_OK(run);
  const BenchmarkResult* b = run->Find("B");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->real_ns, (std::vector<double>{10, 11, 20, 21, 30, 31}));
  // A keeps its aggregate rows: one median per round becomes one sample each.
  const BenchmarkResult* a = run->Find("A");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->from_aggregates);
  EXPECT_EQ(a->real_ns, (std::vector<double>{20, 40, 60}));
}

TEST(MergeTest, RejectsBadInput) {
  EXPECT_FALSE(MergeRuns({}).ok());
  const std::string good = Round(1, "{}");
  for (const char* bad : {"{", "[]", R"({"benchmarks":{}})", R"({"benchmarks":[1]})",
                          R"({"context":1,"benchmarks":[]})",
                          R"({"context":{"skiff_counter_kinds":"nope"},"benchmarks":[]})"}) {
    auto merged = MergeRuns({{"good", good}, {"bad.json", bad}});
    ASSERT_FALSE(merged.ok()) << bad;
    EXPECT_NE(merged.status().message().find("bad.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace skiff::compare
