#include "compare/json_text.h"

#include <gtest/gtest.h>

#include "compare/run.h"
#include "test/status_matchers.h"

namespace skiff::compare {
namespace {

TEST(NullNonFiniteNumbersTest, ReplacesBareTokens) {
  EXPECT_EQ(NullNonFiniteNumbers(R"({"a":NaN,"b":-NaN,"c":Infinity,"d":-Infinity})"),
            R"({"a":null,"b":null,"c":null,"d":null})");
  EXPECT_EQ(NullNonFiniteNumbers("[nan, -nan]"), "[null, null]");
}

TEST(NullNonFiniteNumbersTest, LeavesStringsAndWordsAlone) {
  const std::string text = R"({"NaN":"x NaN \" Infinity","n":null,"v":NaNa,"w":1e5})";
  EXPECT_EQ(NullNonFiniteNumbers(text), text);
}

TEST(NullNonFiniteNumbersTest, RealOutputWithNaNParses) {
  // store_bench (Google Benchmark 1.7.1) prints "cv" of an all-zero counter
  // as NaN; the run must still be readable.
  auto run = LoadRun(std::string(SKIFF_COMPARE_GOLDEN_DIR) + "/real_store_bench_nan.json");
  ASSERT_OK(run);
  const BenchmarkResult* b = run->Find("BM_WriteOne/memory/real_time");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->real_ns.size(), 5u);
  EXPECT_EQ(b->counters.at("statements_per_write").size(), 5u);
}

TEST(MaxNestingTest, CountsContainersOutsideStrings) {
  EXPECT_EQ(MaxNesting("{}"), 1u);
  EXPECT_EQ(MaxNesting(R"({"a":[{"b":"[[[[{{"}]})"), 3u);
  EXPECT_EQ(MaxNesting(R"({"a":"\"[["})"), 1u);
  EXPECT_EQ(MaxNesting("12"), 0u);
}

}  // namespace
}  // namespace skiff::compare
