// ScanRequest against DecodeRequest on mutated frames: whatever the fast
// path takes, the full decoder must accept and read the same way
// (scanner_agreement.h), and the fast path must take enough of them that
// the test cannot pass by refusing everything.
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "doc/document.h"
#include "doc/names.h"
#include "server/internal/wire/request_decoder.h"
#include "server/internal/wire/request_scanner.h"

#include "test/server/same_value.h"
#include "test/server/scanner_agreement.h"

namespace skiff::server::internal {
namespace {

using test::Disagreement;
using test::Escaped;

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds = {
      R"({"id":7,"op":"get","table":"t","key":"k"})",
      R"({"id":12,"op":"has","table":"users","key":"u:1"})",
      R"({"id":3,"op":"delete","table":"t","key":"k"})",
      R"({"id":1,"op":"ping"})",
      R"({"id":2,"op":"logout"})",
      R"({"id":4,"op":"echo","data":"hello"})",
      R"({"id":5,"op":"echo","data":{"a":1,"b":[true,false,null],"c":{"d":-2.5}}})",
      R"({"id":6,"op":"echo","data":[1,-1,0,-0,0.5,"x\"y",[],{}]})",
      R"({"id":8,"op":"set","table":"t","key":"k","value":{"name":"Ann","n":[1,{"x":2}]}})",
      R"({"id":9,"op":"merge","table":"t","key":"k","patch":{"a":null,"b":{"c":1}}})",
      R"({"id":10,"op":"add","table":"t","key":"k","delta":5})",
      R"({"id":10,"op":"add","table":"t","key":"k","path":["a","b"],"delta":-3})",
      R"({"id":10,"op":"add","table":"t","key":"k","path":[],"delta":2.5})",
      R"({"id":10,"op":"add","table":"t","key":"k","delta":-0})",
      " { \"id\" : 11 , \"op\" : \"set\" , \"table\" : \"t\" , \"key\" : \"k\" , \"value\" : [ 1 "
      ", { \"a\" : [ ] } ] } ",
      R"({"id":13,"trace":{"span":[1,2,{"x":"\n"}]},"op":"get","table":"t","key":"k"})",
      "{\"id\":14,\"op\":\"get\",\"table\":\"t\",\"key\":\"caf\xC3\xA9-\xE9\x94\xAE-\xF0\x9F\x98"
      "\x80\"}",
      R"({"id":9999999999999999999,"op":"ping"})",
      R"({"id":1,"op":"echo","data":[[[[1]]]]})",  // at the tight depth limit and past it
      // Frames the fast path refuses.
      R"({"id":1,"op":"login","user":"u","secret":"s"})",
      R"({"id":1,"op":"all","table":"t","limit":10})",
      R"({"id":1,"op":"stats"})",
      R"({"id":1,"id":2,"op":"get","table":"t","key":"k"})",
      R"({"id":1,"op":"get","table":"t","key":"\u00e9"})",
      R"({"id":1,"op":"echo","data":"\ud83d\ude00"})",
      "{\"id\":1,\"op\":\"get\",\"table\":\"t\",\"key\":\"\xED\xA0\x80\"}",
      "{\"id\":1,\"op\":\"get\",\"table\":\"t\",\"key\":\"\xC0\x80\"}",
      R"({"id":1,"op":"add","table":"t","key":"k","delta":1e3})",
      R"({"id":12345678901234567890,"op":"ping"})",
      "\xEF\xBB\xBF{\"id\":1,\"op\":\"ping\"}",
      R"({"id":1,"op":"ping"} x)",
  };
  return seeds;
}

// Bytes that change what a frame means: structure, escapes, UTF-8 lead and
// continuation bytes, number characters, whitespace and NUL.
constexpr char kInterestingBytes[] = {
    '"', '\\', '{', '}', '[', ']', ',', ':',  '\x80', '\xBF', '\xC3', '\xED', '\xF4', '\xA0',
    '0', '9',  '-', '.', 'e', 'u', ' ', '\n', '\t',   '\x00', '\x1F', '\xEF', '\xF0', '\xC0'};
constexpr std::string_view kTokens[] = {"\\u00e9",
                                        "\\ud800",
                                        "\\\"",
                                        "\\/",
                                        "1e5",
                                        "-0",
                                        "0.5",
                                        "null",
                                        "true",
                                        "[]",
                                        "{}",
                                        "\"\"",
                                        ",\"id\":2",
                                        ",\"op\":\"get\"",
                                        ",\"x\":1",
                                        "\"delta\"",
                                        "\"path\"",
                                        "\"data\"",
                                        "\"value\"",
                                        "\xC3\xA9",
                                        "\xF0\x9F\x98\x80",
                                        "\xEF\xBB\xBF",
                                        "9999999999",
                                        "[[[[",
                                        "]]]]"};

// Members that mutants gain: the request's own, repeated or retyped.
constexpr std::string_view kNames[] = {R"("id")",    R"("op")",   R"("table")", R"("key")",
                                       R"("value")", R"("data")", R"("patch")", R"("delta")",
                                       R"("path")",  R"("x")"};
constexpr std::string_view kValues[] = {"1",
                                        "-0",
                                        "0.0",
                                        "18446744073709551615",
                                        R"("k")",
                                        R"("get")",
                                        R"("echo")",
                                        R"("set")",
                                        R"("add")",
                                        "null",
                                        R"(["a"])",
                                        "{}",
                                        R"({"a":1,"a":2})",
                                        R"("é")"};

// rng() % n rather than std::uniform_int_distribution: the mutants are then
// the same with every standard library.
size_t Below(std::mt19937& rng, size_t n) { return n == 0 ? 0 : rng() % n; }

std::string Mutate(std::mt19937& rng, const std::vector<std::string>& seeds) {
  std::string s = seeds[Below(rng, seeds.size())];
  // Half the mutants get one change, so that many stay valid frames.
  const size_t steps = Below(rng, 2) == 0 ? 1 : 2 + Below(rng, 2);
  for (size_t step = 0; step < steps; ++step) {
    const size_t pos = Below(rng, s.size() + 1);
    switch (Below(rng, 12)) {
      case 0:  // flip a bit
        if (pos < s.size()) s[pos] = static_cast<char>(s[pos] ^ (1 << Below(rng, 8)));
        break;
      case 1:  // replace a byte
        if (pos < s.size()) s[pos] = kInterestingBytes[Below(rng, std::size(kInterestingBytes))];
        break;
      case 2:  // insert a byte
        s.insert(pos, 1, kInterestingBytes[Below(rng, std::size(kInterestingBytes))]);
        break;
      case 3:  // insert a token
        s.insert(pos, kTokens[Below(rng, std::size(kTokens))]);
        break;
      case 4:  // delete a few bytes
        s.erase(pos, 1 + Below(rng, 4));
        break;
      case 5:  // truncate
        s.resize(pos);
        break;
      case 6: {  // splice: this frame's head, another's tail
        const std::string& other = seeds[Below(rng, seeds.size())];
        s = s.substr(0, pos) + other.substr(Below(rng, other.size() + 1));
        break;
      }
      case 7: {  // duplicate a stretch elsewhere
        const size_t from = Below(rng, s.size() + 1);
        const std::string stretch = s.substr(from, 1 + Below(rng, 16));
        s.insert(Below(rng, s.size() + 1), stretch);
        break;
      }
      case 8: {  // change a letter or digit, which keeps most frames valid
        constexpr std::string_view kAlnum = "abcdefghijklmnopqrstuvwxyz0123456789";
        const size_t at = s.find_first_of(kAlnum, pos);
        if (at != std::string::npos) s[at] = kAlnum[Below(rng, kAlnum.size())];
        break;
      }
      case 9: {  // add a member after the next '{' or ','
        const size_t at = s.find_first_of("{,", pos);
        if (at != std::string::npos) {
          const std::string member = std::string(kNames[Below(rng, std::size(kNames))]) + ":" +
                                     std::string(kValues[Below(rng, std::size(kValues))]) + ",";
          s.insert(at + 1, member);
        }
        break;
      }
      case 10: {  // whitespace after the next structural character
        constexpr std::string_view kSpace = " \t\r\n";
        const size_t at = s.find_first_of("{}[],:", pos);
        if (at != std::string::npos) s.insert(at + 1, 1, kSpace[Below(rng, kSpace.size())]);
        break;
      }
      default:  // change a digit
        if (pos < s.size()) s[pos] = static_cast<char>('0' + Below(rng, 10));
        break;
    }
  }
  return s;
}

TEST(RequestScannerTest, NeverDisagreesWithTheFullDecoderOnMutatedFrames) {
  const std::vector<std::string> seeds = Seeds();
  const std::set<std::string> unchanged(seeds.begin(), seeds.end());
  const doc::Limits default_limits;
  // A tight depth puts the seeds near the limit; the size limit is hit by
  // insertions and splices.
  const doc::Limits tight{.max_depth = 4, .max_document_bytes = 96};
  std::mt19937 rng(20240611);
  constexpr int kMutations = 20000;
  int taken = 0;        // under the default limits
  int taken_new = 0;    // of those, frames that are not a seed
  int taken_tight = 0;  // under the tight limits
  int failures = 0;
  for (int i = 0; i < kMutations; ++i) {
    const std::string frame = Mutate(rng, seeds);
    for (const doc::Limits* limits : {&default_limits, &tight}) {
      bool fast = false;
      const std::string disagreement = Disagreement(frame, *limits, &fast);
      if (fast && limits == &tight) {
        ++taken_tight;
      } else if (fast) {
        ++taken;
        if (unchanged.count(frame) == 0) ++taken_new;
      }
      if (!disagreement.empty() && ++failures <= 10) {
        ADD_FAILURE() << "mutation " << i << " (max_depth " << limits->max_depth << "): \""
                      << Escaped(frame) << "\": " << disagreement;
      }
    }
  }
  EXPECT_EQ(failures, 0);
  // Not vacuous: a good share of the mutants, most of them changed, must
  // reach the fast path (1,579, 1,269 and 1,498 when this was written).
  EXPECT_GE(taken, kMutations / 20);
  EXPECT_GE(taken_new, kMutations / 20);
  EXPECT_GE(taken_tight, kMutations / 20);
  std::printf(
      "fast path took %d of %d mutated frames (%d changed from their seed; %d under tight "
      "limits)\n",
      taken, kMutations, taken_new, taken_tight);
}

}  // namespace
}  // namespace skiff::server::internal
