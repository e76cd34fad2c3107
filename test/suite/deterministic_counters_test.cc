// The suite's rule for deterministic counters (support/counters.h): each is a
// count of what the code did in the run, so the comparer can fail a run when
// one changes. A value written as a constant (a literal, a kConstant, a
// shape's own parameter) never depends on what the code did: it can never
// change, so declaring it deterministic claims a check that does not exist.
// This test reads every SetDeterministic call in bench/ and support/ and
// fails on a value that is such a constant.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

struct Call {
  std::string where;  // file:line
  std::string name;   // the counter name argument, as written
  std::string value;  // the value argument, as written
};

// The arguments of the call whose '(' is at `open`, split at top-level commas.
std::vector<std::string> Arguments(const std::string& text, size_t open) {
  std::vector<std::string> args(1);
  int depth = 0;
  bool in_string = false;
  for (size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      args.back() += c;
      if (c == '\\' && i + 1 < text.size()) {
        args.back() += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '(' || c == '{' || c == '[') ++depth;
    if (c == ')' || c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
    }
    if (c == ',' && depth == 0) {
      args.emplace_back();
      continue;
    }
    args.back() += c;
  }
  for (std::string& a : args) {
    a = std::regex_replace(a, std::regex(R"(\s+)"), " ");
    a = std::regex_replace(a, std::regex(R"(^ | $)"), "");
  }
  return args;
}

std::vector<Call> FindCalls(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::vector<Call> calls;
  const std::string needle = "SetDeterministic(";
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) {
    // Skip the declaration and definition in support/counters.*.
    if (at >= 5 && s.compare(at - 5, 5, "void ") == 0) continue;
    std::vector<std::string> args = Arguments(s, at + needle.size() - 1);
    if (args.size() != 3) continue;
    const auto line = 1 + std::count(s.begin(), s.begin() + static_cast<long>(at), '\n');
    calls.push_back({file.filename().string() + ":" + std::to_string(line), args[1], args[2]});
  }
  return calls;
}

// What a value that cannot depend on the run looks like: a number, a
// kConstant, a cast of either, or a shape's or option's own field.
bool IsConstant(const std::string& value) {
  static const std::regex kConstant(
      R"(^(double|static_cast<double>)?\(?\s*(-?[0-9][0-9.e+']*|k[A-Z][A-Za-z0-9]*|(shape|options|opts|spec|scale)\.[a-z_]+)\s*\)?$)");
  return std::regex_match(value, kConstant);
}

std::vector<Call> AllCalls() {
  std::vector<Call> calls;
  for (const char* dir : {"bench", "support"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(SKIFF_SOURCE_DIR) / dir)) {
      const auto ext = entry.path().extension();
      if (ext != ".cc" && ext != ".h") continue;
      for (Call& c : FindCalls(entry.path())) calls.push_back(std::move(c));
    }
  }
  return calls;
}

TEST(DeterministicCountersTest, RecognisesConstants) {
  for (const char* v : {"0", "1", "double(kLoopConnections)", "kReads", "double(shape.connections)",
                        "static_cast<double>(scale.documents)", "2.5"}) {
    EXPECT_TRUE(IsConstant(v)) << v;
  }
  for (const char* v : {"double(run->error_count())", "double(rows) / double(scans)",
                        "double(counters.requests)", "statements", "double(index.size())"}) {
    EXPECT_FALSE(IsConstant(v)) << v;
  }
  const std::string text = "SetDeterministic(state, \"a,b\", double(f(x, y)));";
  std::vector<std::string> args = Arguments(text, text.find('('));
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[2], "double(f(x, y))");
}

TEST(DeterministicCountersTest, EveryDeterministicCounterIsCounted) {
  const std::vector<Call> calls = AllCalls();
  // The suite has dozens; finding none means the scan is broken.
  ASSERT_GT(calls.size(), 20u);
  for (const Call& c : calls) {
    EXPECT_FALSE(IsConstant(c.value))
        << c.where << ": deterministic counter " << c.name << " is set from " << c.value
        << ", which does not depend on what the code did: count it, or make it SetInfo";
  }
}

}  // namespace
