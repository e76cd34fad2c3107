// The UTF-8 check against RFC 3629's table of well-formed sequences, and its
// agreement across any cut into pieces.
#include "ws/utf8.h"

#include <string>

#include <gtest/gtest.h>

namespace skiff::ws {
namespace {

TEST(Utf8Test, AcceptsWellFormedText) {
  for (const char* text :
       {"", "plain ascii, longer than one word", "caf\xc3\xa9", "\xe2\x82\xac", "\xef\xbf\xbf",
        "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf", "\xe0\xa0\x80"}) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
  }
}

TEST(Utf8Test, RefusesWhatRfc3629Forbids) {
  for (const char* text : {"\x80", "\xbf", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80",
                           "\xed\xbf\xbf", "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80",
                           "\xf5\x80\x80\x80", "\xff", "\xc3", "\xe2\x82", "abc\xc3\x28"}) {
    EXPECT_FALSE(IsValidUtf8(text)) << "refused: " << ::testing::PrintToString(std::string(text));
  }
}

TEST(Utf8Test, EveryCutAgreesWithTheWhole) {
  const std::string text = "0123456789 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 end of it";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Utf8Validator v;
    EXPECT_TRUE(v.Feed(text.substr(0, cut)));
    EXPECT_TRUE(v.Feed(text.substr(cut)));
    EXPECT_TRUE(v.complete()) << cut;
  }
  const std::string bad = text + "\xc3\x28";
  for (size_t cut = 0; cut <= bad.size(); ++cut) {
    Utf8Validator v;
    const bool ok = v.Feed(bad.substr(0, cut)) && v.Feed(bad.substr(cut)) && v.complete();
    EXPECT_FALSE(ok) << cut;
  }
}

}  // namespace
}  // namespace skiff::ws
