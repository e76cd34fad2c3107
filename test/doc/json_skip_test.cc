// The shared JSON skipping kernel (doc/json_skip.h): a text is one whole
// value for the kernel exactly when the full parser takes it; values end
// where their grammar does; escapes decode to the code points they name;
// nesting stops at kMaxSkipDepth; and a reader's own stop scan changes
// nothing but speed.
#include "doc/json_skip.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "doc/document.h"

namespace skiff::doc {
namespace {

const char* End(std::string_view text) { return text.data() + text.size(); }

// One past the value at the start of `text`, as an offset; -1 when refused.
template <JsonStringStopFn kFindStop = FindJsonStringStop>
long Skipped(std::string_view text) {
  const char* end = SkipJsonValue<kFindStop>(text.data(), End(text));
  return end == nullptr ? -1 : end - text.data();
}

bool WholeValue(std::string_view text) {
  const char* end = SkipJsonValue(text.data(), End(text));
  return end != nullptr && SkipJsonSpace(end, End(text)) == End(text);
}

// The same bytes as FindJsonStringStop, found another way, as a reader's
// faster scan would.
const char* FindStopBackwards(const char* p, const char* end) {
  const char* stop = end;
  for (const char* q = end; q > p; --q) {
    const unsigned char c = static_cast<unsigned char>(q[-1]);
    if (c == '"' || c == '\\' || c < 0x20) stop = q - 1;
  }
  return stop;
}

TEST(JsonSkipTest, TheKernelAgreesWithTheParser) {
  for (std::string_view text : {"0",
                                " -1.5e3 ",
                                "\"\"",
                                R"("a\"b\\c\/\b\f\n\r\t")",
                                R"("\u00e9\uD83D\uDE00")",
                                "true",
                                "false",
                                "null",
                                "[]",
                                "{}",
                                " [ 1 , [ ] , { } ] ",
                                R"({"a":{"b":[1,"}",null]}})",
                                R"({ "a" : 1 , "b" : "x" })",
                                "",
                                " ",
                                "01",
                                "-",
                                "1.",
                                "+1",
                                "tru",
                                "nul",
                                "True",
                                "\"abc",
                                "\"a\x01\"",
                                R"("\x")",
                                R"("\u12")",
                                R"("\uD83D")",
                                R"("\uDE00")",
                                R"("\uD83D\u0041")",
                                R"("\")",
                                "[1,]",
                                "[,1]",
                                "[1 2]",
                                "{\"a\"}",
                                "{\"a\":}",
                                "{a:1}",
                                "{\"a\":1,}",
                                "{\"a\" 1}",
                                "[1}",
                                "{\"a\":1]",
                                "[",
                                "]",
                                "1 2",
                                "[1]]",
                                "{}x"}) {
    const Result<Value> parsed = Parse(text);
    EXPECT_EQ(WholeValue(text), parsed.ok()) << "'" << text << "'";
  }
}

TEST(JsonSkipTest, AValueEndsWhereItsGrammarDoes) {
  EXPECT_EQ(Skipped("  12,3"), 4);
  EXPECT_EQ(Skipped("01"), 1);
  EXPECT_EQ(Skipped("truex"), 4);
  EXPECT_EQ(Skipped(R"("a,b" ,)"), 5);
  EXPECT_EQ(Skipped(R"({"a":[1,"]"]} ,)"), 13);
  EXPECT_EQ(Skipped("[1] ]"), 3);
}

TEST(JsonSkipTest, NeverReadsPastTheEnd) {
  // Each cut is copied to a buffer of its own size, so that a sanitizer
  // build sees any read beyond it.
  for (std::string_view text : {R"({"a":"bc"})", R"(["\uD83D\uDE00",-1.5e3,true])"}) {
    for (size_t n = 0; n < text.size(); ++n) {
      const std::vector<char> cut(text.begin(), text.begin() + static_cast<long>(n));
      EXPECT_EQ(SkipJsonValue(cut.data(), cut.data() + n), nullptr) << text.substr(0, n);
    }
  }
}

TEST(JsonSkipTest, EscapesDecodeToTheirCodePoints) {
  auto decode = [](std::string_view escape) -> int64_t {
    uint32_t cp = 0;
    const char* end = ReadJsonEscape(escape.data(), End(escape), &cp);
    if (end == nullptr) return -1;
    return end == End(escape) ? int64_t{cp} : -2;
  };
  EXPECT_EQ(decode("n"), '\n');
  EXPECT_EQ(decode("/"), '/');
  EXPECT_EQ(decode("u0064"), 'd');
  EXPECT_EQ(decode("u00E9"), 0xE9);
  EXPECT_EQ(decode(R"(uD83D\uDE00)"), 0x1F600);
  for (std::string_view bad :
       {"", "x", "u", "u12", "u12g4", "uD83D", R"(uD83D\n)", R"(uD83D\u0041)", "uDE00"}) {
    EXPECT_EQ(decode(bad), -1) << bad;
  }
}

TEST(JsonSkipTest, NestingStopsAtTheBound) {
  auto nested = [](int levels, std::string_view inner) {
    return std::string(levels, '[') + std::string(inner) + std::string(levels, ']');
  };
  // The outermost array is at depth 0, so kMaxSkipDepth + 1 of them fit.
  EXPECT_TRUE(WholeValue(nested(kMaxSkipDepth + 1, "")));
  EXPECT_FALSE(WholeValue(nested(kMaxSkipDepth + 2, "")));
  EXPECT_TRUE(WholeValue(nested(kMaxSkipDepth, "1")));
  EXPECT_FALSE(WholeValue(nested(kMaxSkipDepth + 1, "1")));
  // A caller one level down (a member's value) has one level less.
  const std::string deepest = nested(kMaxSkipDepth, "");
  EXPECT_NE(SkipJsonValue(deepest.data(), End(deepest), 1), nullptr);
  const std::string deeper = nested(kMaxSkipDepth + 1, "");
  EXPECT_EQ(SkipJsonValue(deeper.data(), End(deeper), 1), nullptr);
}

TEST(JsonSkipTest, AReadersOwnStopScanChangesNothing) {
  for (std::string_view text :
       {R"({"a":"x\"y","b":["\u00e9",1]} )", R"("a\x")", "\"a\nb\"", R"(["abc)", R"({"k":"v"})"}) {
    EXPECT_EQ(Skipped<FindStopBackwards>(text), Skipped(text)) << text;
  }
}

}  // namespace
}  // namespace skiff::doc
