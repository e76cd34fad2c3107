// The UTF-8 patch (tools/cmake/websocketpp/utf8-ascii-fast-path.patch): the
// client's websocketpp is the patched one, and its validator's verdicts are
// those of the stock table walk, fed whole or split anywhere, including
// ASCII right before, after and inside multi-byte sequences.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <websocketpp/utf8_validator.hpp>

#ifndef WEBSOCKETPP_UTF8_ASCII_FAST_PATH
#error "the patched utf8_validator.hpp is not first on the include path"
#endif

namespace {

namespace v = websocketpp::utf8_validator;

// The stock algorithm, byte by byte through the library's own table.
bool Reference(const std::string& s) {
  uint32_t state = v::utf8_accept, codepoint = 0;
  for (char c : s) {
    if (v::decode(&state, &codepoint, static_cast<uint8_t>(c)) == v::utf8_reject) return false;
  }
  return state == v::utf8_accept;
}

// Fed in two parts through the overload processor::hybi13 uses (a
// mutable string's iterators).
bool Split(std::string s, size_t at) {
  v::validator val;
  const auto cut = s.begin() + static_cast<std::ptrdiff_t>(at);
  return val.decode(s.begin(), cut) && val.decode(cut, s.end()) && val.complete();
}

TEST(Utf8FastPathTest, SameVerdictsAsTheTableWalk) {
  const std::vector<std::string> cases = {
      "",
      "plain ascii text",
      "caf\xC3\xA9 ok",
      "\xE2\x82\xAC euro",
      "emoji \xF0\x9F\x98\x80 end",
      "a\xC3",               // cut short
      "a\xC3z",              // ASCII where a continuation must be
      "\x80 stray",          // continuation without a lead
      "over \xC0\xAF long",  // overlong
      "sur \xED\xA0\x80 rogate",
      "big \xF4\x90\x80\x80",
      "\xFF",
      "x\xE2\x82",
      "sixteen ascii b\xC3\xA9ytes and more ascii after it",
      "eight by\xE2\x82\xAC then sixteen bytes of ascii",
      "long ascii run with a bad byte at the end of it \xFF",
      "long ascii run then a cut sequence at the very end \xF0\x9F\x98",
  };
  for (const std::string& s : cases) {
    EXPECT_EQ(v::validate(s), Reference(s)) << s;
    for (size_t at = 0; at <= s.size(); ++at) EXPECT_EQ(Split(s, at), Reference(s)) << s << at;
  }
  EXPECT_TRUE(v::validate("caf\xC3\xA9"));
  EXPECT_FALSE(v::validate("a\xC3z"));
}

}  // namespace
