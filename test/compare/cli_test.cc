#include "compare/cli.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/status_matchers.h"

namespace skiff::compare {
namespace {

std::string Golden(const std::string& name) {
  return std::string(SKIFF_COMPARE_GOLDEN_DIR) + "/" + name;
}

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome Invoke(std::vector<std::string> args) {
  std::ostringstream out, err;
  int code = RunCompareCli(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(CliOptionsTest, Defaults) {
  auto o = ParseCliOptions({"a.json", "b.json"});
  ASSERT_OK(o);
  EXPECT_EQ(o->base_path, "a.json");
  EXPECT_EQ(o->head_path, "b.json");
  EXPECT_EQ(o->format, Format::kTable);
  EXPECT_DOUBLE_EQ(o->settings.alpha, 0.05);
  EXPECT_DOUBLE_EQ(o->settings.threshold_pct, 5);
  EXPECT_DOUBLE_EQ(o->settings.MaxCvPct(), 5);
  EXPECT_EQ(o->settings.min_repetitions, 3);
  EXPECT_FALSE(o->settings.fail_on_slower);
}

TEST(CliOptionsTest, BothFlagSpellings) {
  auto o = ParseCliOptions({"--threshold=10", "--alpha", "0.01", "--format", "json", "--max-cv=20",
                            "--min-repetitions", "5", "--cpu-time", "--fail-on-slower", "a", "b"});
  ASSERT_OK(o);
  EXPECT_DOUBLE_EQ(o->settings.threshold_pct, 10);
  EXPECT_DOUBLE_EQ(o->settings.alpha, 0.01);
  EXPECT_DOUBLE_EQ(o->settings.MaxCvPct(), 20);
  EXPECT_EQ(o->settings.min_repetitions, 5);
  EXPECT_TRUE(o->settings.cpu_time);
  EXPECT_TRUE(o->settings.fail_on_slower);
  EXPECT_EQ(o->format, Format::kJson);
  // --max-cv follows --threshold unless given.
  auto t = ParseCliOptions({"--threshold", "8", "a", "b"});
  ASSERT_OK(t);
  EXPECT_DOUBLE_EQ(t->settings.MaxCvPct(), 8);
}

TEST(CliOptionsTest, BadArguments) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"a"},
           {"a", "b", "c"},
           {"--format", "html", "a", "b"},
           {"--threshold", "five", "a", "b"},
           {"--threshold", "-1", "a", "b"},
           {"--alpha", "1.5", "a", "b"},
           {"--min-repetitions", "0", "a", "b"},
           {"--min-repetitions", "2.5", "a", "b"},
           {"--alpha"},
           {"--cpu-time=yes", "a", "b"},
           {"--bogus", "a", "b"},
           {"--figures"},
           {"--figures", "a", "b"},
           {"--figures", "--filters", "sqlite", "postgres", "a"},
           {"--figures", "--format", "table", "a"},
           {"--figures", "--format=markdown", "a"},
       }) {
    EXPECT_FALSE(ParseCliOptions(args).ok()) << ::testing::PrintToString(args);
  }
}

TEST(CliOptionsTest, BooleanFlagsBareOrTrueOrFalse) {
  auto bare = ParseCliOptions({"--cpu-time", "a", "b"});
  ASSERT_OK(bare);
  EXPECT_TRUE(bare->settings.cpu_time);
  EXPECT_EQ(bare->base_path, "a");  // a bare flag never takes the next word
  auto valued = ParseCliOptions({"--cpu-time=true", "--fail-on-slower=false", "a", "b"});
  ASSERT_OK(valued);
  EXPECT_TRUE(valued->settings.cpu_time);
  EXPECT_FALSE(valued->settings.fail_on_slower);
}

TEST(CliOptionsTest, FiguresTakeOneRun) {
  auto o = ParseCliOptions({"--figures", "run.json"});
  ASSERT_OK(o);
  EXPECT_TRUE(o->figures);
  EXPECT_EQ(o->head_path, "run.json");
  EXPECT_EQ(o->format, Format::kJson);
  auto json = ParseCliOptions({"--format=json", "--figures", "run.json"});
  ASSERT_OK(json);
  EXPECT_TRUE(json->figures);
  auto plain = ParseCliOptions({"a.json", "b.json"});
  ASSERT_OK(plain);
  EXPECT_FALSE(plain->figures);
}

TEST(CliTest, UsageErrorsSayWhat) {
  Outcome unknown = Invoke({"--bogus", "a", "b"});
  EXPECT_EQ(unknown.code, 64);
  EXPECT_NE(unknown.err.find("--bogus"), std::string::npos) << unknown.err;
  Outcome bad = Invoke({"--alpha", "2", "a", "b"});
  EXPECT_EQ(bad.code, 64);
  EXPECT_NE(bad.err.find("--alpha"), std::string::npos) << bad.err;
  EXPECT_TRUE(unknown.out.empty());
}

// docs/benchmarks.md's option table lists every option --help lists.
TEST(CliTest, BenchmarksDocListsEveryOption) {
  std::ifstream in(std::string(SKIFF_COMPARE_GOLDEN_DIR) + "/../../../docs/benchmarks.md");
  ASSERT_TRUE(in);
  std::stringstream doc;
  doc << in.rdbuf();
  std::istringstream help(HelpText());
  int options = 0;
  for (std::string word; help >> word;) {
    if (word.rfind("--", 0) != 0 || word == "--help" || word.size() < 3) continue;
    word = word.substr(0, word.find_first_not_of("abcdefghijklmnopqrstuvwxyz-"));
    ++options;
    EXPECT_NE(doc.str().find("| `" + word), std::string::npos) << word;
  }
  EXPECT_GE(options, 9);
}

TEST(CliTest, HelpExitsZero) {
  Outcome o = Invoke({"--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("Usage: skiff-compare"), std::string::npos);
  EXPECT_NE(o.out.find("Exit codes"), std::string::npos);
}

TEST(CliTest, ExitCodes) {
  EXPECT_EQ(Invoke({Golden("real_base.json"), Golden("real_rerun.json")}).code, 0);
  EXPECT_EQ(Invoke({Golden("real_base.json"), Golden("real_counter_changed.json")}).code, 1);
  EXPECT_EQ(Invoke({Golden("real_ok3.json"), Golden("real_errored3.json")}).code, 2);
  EXPECT_EQ(Invoke({Golden("hand_base.json"), Golden("hand_added_removed.json")}).code, 2);
  EXPECT_EQ(Invoke({Golden("real_base.json"), Golden("real_slower30.json")}).code, 0);
  EXPECT_EQ(
      Invoke({"--fail-on-slower", Golden("real_base.json"), Golden("real_slower30.json")}).code, 4);
  EXPECT_EQ(Invoke({"--bogus"}).code, 64);  // the suite's usage code
  EXPECT_EQ(Invoke({"--filters", "sqlite"}).code, 64);
  EXPECT_EQ(Invoke({"--filters", "sqlite", "postgres", "a.json", "b.json"}).code, 64);
}

TEST(CliTest, FiltersCompareTwoStoresOfOneRun) {
  Outcome o = Invoke({"--filters", "sqlite", "postgres", Golden("hand_two_stores.json")});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("BM_WriteOne/*/real_time"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("shown, not judged"), std::string::npos) << o.out;
  EXPECT_EQ(Invoke({"--filters", "(", "x", Golden("hand_two_stores.json")}).code, 64);
}

TEST(CliTest, OneNotePerCause) {
  Outcome o = Invoke({Golden("hand_noisy_base.json"), Golden("hand_noisy_head.json")});
  EXPECT_EQ(o.code, 0);
  size_t lines = 0;
  for (size_t at = o.out.find("coefficient of variation above"); at != std::string::npos;
       at = o.out.find("coefficient of variation above", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << o.out;
  EXPECT_NE(o.out.find("no verdict: 8 compared (8 unstable)"), std::string::npos) << o.out;
}

TEST(CliTest, BadInputSaysWhichFileAndWhy) {
  Outcome o = Invoke({Golden("real_base.json"), Golden("malformed_truncated.json")});
  EXPECT_EQ(o.code, 3);
  EXPECT_TRUE(o.out.empty());
  EXPECT_NE(o.err.find("malformed_truncated.json: malformed JSON"), std::string::npos) << o.err;
  o = Invoke({Golden("missing.json"), Golden("real_base.json")});
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("missing.json: cannot be read"), std::string::npos) << o.err;
}

TEST(CliTest, TableOutput) {
  Outcome o = Invoke({Golden("real_base.json"), Golden("real_slower30.json")});
  EXPECT_NE(o.out.find("Benchmark    Base      Head      Diff"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("+30.0%"), std::string::npos);
  EXPECT_NE(o.out.find("slower"), std::string::npos);
  EXPECT_NE(o.out.find("Result: exit 0"), std::string::npos);
}

TEST(CliTest, MarkdownOutput) {
  Outcome o =
      Invoke({"--format=markdown", Golden("real_base.json"), Golden("real_counter_changed.json")});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("| Benchmark | Base | Head |"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| BM_Sum/4000 | statements_per_write | 3 | 4 |"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("**Result:** exit 1"), std::string::npos);
}

// A run alone: its figures, whatever happened in it (an errored case is a
// state among the figures, not an exit code), and the same figures a
// comparison with it as HEAD carries.
TEST(CliTest, FiguresOfOneRunJudgeNothing) {
  Outcome o = Invoke({"--figures", Golden("real_errored3.json")});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(o.err.empty()) << o.err;
  auto doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc["format"], "skiff-compare-figures/1");
  EXPECT_FALSE(doc.contains("benchmarks"));
  EXPECT_FALSE(doc.contains("exit_code"));
  Outcome compared =
      Invoke({"--format", "json", Golden("real_ok3.json"), Golden("real_errored3.json")});
  EXPECT_EQ(compared.code, 2);
  EXPECT_EQ(doc["runs"]["head"], nlohmann::json::parse(compared.out)["runs"]["head"]);
  bool errored = false;
  for (const auto& b : doc["runs"]["head"]["benchmarks"]) errored |= b["state"] == "errored";
  EXPECT_TRUE(errored);
}

TEST(CliTest, FiguresOfBadInputExitThree) {
  Outcome o = Invoke({"--figures", Golden("malformed_truncated.json")});
  EXPECT_EQ(o.code, 3);
  EXPECT_TRUE(o.out.empty());
  EXPECT_NE(o.err.find("malformed_truncated.json: malformed JSON"), std::string::npos) << o.err;
  EXPECT_EQ(Invoke({"--figures", Golden("real_base.json"), Golden("real_base.json")}).code, 64);
}

TEST(CliTest, JsonOutputIsMachineReadable) {
  Outcome o = Invoke({"--format", "json", Golden("real_ok3.json"), Golden("real_errored3.json")});
  EXPECT_EQ(o.code, 2);
  auto doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc["format"], "skiff-compare/1");
  EXPECT_EQ(doc["exit_code"], 2);
  EXPECT_EQ(doc["benchmarks"][0]["verdict"], "too_few_repetitions");
  EXPECT_EQ(doc["errored"][0]["benchmark"], "BM_Fails");
  EXPECT_EQ(doc["errored"][0]["side"], "head");
  EXPECT_EQ(doc["summary"]["errored_in_head"], 1);
  EXPECT_EQ(doc["summary"]["slower"], 0);
  EXPECT_EQ(doc["summary"]["too_few_repetitions"], 1);
}

}  // namespace
}  // namespace skiff::compare
