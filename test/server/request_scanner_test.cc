// ScanRequest against DecodeRequest on chosen frames: the fast path must take
// the frames the benchmarks send and refuse everything unusual, reading what
// it takes exactly as the full decoder does (scanner_agreement.h). The
// mutated frames are in request_scanner_mutation_test.cc.
#include "server/internal/wire/request_scanner.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "doc/document.h"
#include "doc/names.h"
#include "server/internal/wire/request_decoder.h"

#include "test/server/same_value.h"
#include "test/server/scanner_agreement.h"
#include "test/status_matchers.h"

namespace skiff::server::internal {
namespace {

using test::Disagreement;
using test::Escaped;
using test::SameValue;

// EXPECT-style check that the fast path takes `text` and agrees.
testing::AssertionResult TakenAndAgrees(std::string_view text, const doc::Limits& limits = {}) {
  bool taken = false;
  const std::string disagreement = Disagreement(text, limits, &taken);
  if (!disagreement.empty()) {
    return testing::AssertionFailure() << "\"" << Escaped(text) << "\": " << disagreement;
  }
  if (!taken) return testing::AssertionFailure() << "\"" << Escaped(text) << "\" not taken";
  return testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------
// Frames the fast path takes.

struct TakenCase {
  std::string text;
  Op op;
  uint64_t id;
  std::string table;
  std::string key;
  doc::Path path;
  // JSON text the value member (value, patch, delta or data) reads as; the
  // types it parses to are the expected types (5 unsigned, -5 signed).
  std::string value;
};

// {"m0":0,"m1":1,...} with `count` members.
std::string ManyMembers(size_t count) {
  std::string out = "{";
  for (size_t i = 0; i < count; ++i) {
    out += (i == 0 ? "\"m" : ",\"m") + std::to_string(i) + "\":" + std::to_string(i);
  }
  return out + "}";
}

std::vector<TakenCase> TakenCases() {
  return {
      {R"({"id":7,"op":"get","table":"t","key":"k"})", Op::kGet, 7, "t", "k", {}, ""},
      {R"({"id":0,"op":"has","table":"Users_2-x","key":"user:42"})",
       Op::kHas,
       0,
       "Users_2-x",
       "user:42",
       {},
       ""},
      {R"({"id":3,"op":"delete","table":"t","key":"k"})", Op::kDelete, 3, "t", "k", {}, ""},
      {R"({"id":1,"op":"ping"})", Op::kPing, 1, "", "", {}, ""},
      {R"({"id":2,"op":"logout"})", Op::kLogout, 2, "", "", {}, ""},
      {R"({"op":"ping","id":9999999999999999999})",
       Op::kPing,
       9999999999999999999u,
       "",
       "",
       {},
       ""},
      {R"({"id":4,"op":"echo","data":"hello"})", Op::kEcho, 4, "", "", {}, R"("hello")"},
      {R"({"id":4,"op":"echo","data":"a\"b\\c\/d\n\t\r\b\f"})",
       Op::kEcho,
       4,
       "",
       "",
       {},
       R"("a\"b\\c/d\n\t\r\b\f")"},
      {R"({"id":5,"op":"echo","data":{"a":1,"b":[true,false,null],"c":{"d":-2.5}}})",
       Op::kEcho,
       5,
       "",
       "",
       {},
       R"({"a":1,"b":[true,false,null],"c":{"d":-2.5}})"},
      {R"({"id":6,"op":"echo","data":[1,-1,0,-0,0.5,"x",[],{}]})",
       Op::kEcho,
       6,
       "",
       "",
       {},
       R"([1,-1,0,-0,0.5,"x",[],{}])"},
      {R"({"id":6,"op":"echo","data":null})", Op::kEcho, 6, "", "", {}, "null"},
      {R"({"id":6,"op":"echo","data":-123456789.123456789})",  // 20 characters
       Op::kEcho,
       6,
       "",
       "",
       {},
       "-123456789.123456789"},
      {"{\"id\":8,\"op\":\"set\",\"table\":\"t\",\"key\":\"\x7F\",\"value\":\"\x7F\"}",
       Op::kSet,
       8,
       "t",
       "\x7F",
       {},
       "\"\x7F\""},  // DEL needs no escape
      {R"({"id":8,"op":"set","table":"t","key":"k","value":{"name":"Ann","tags":["a","b"],)"
       R"("age":31,"score":1.5,"neg":-4,"ok":true,"none":null,"deep":{"x":{"y":[{}]}}}})",
       Op::kSet,
       8,
       "t",
       "k",
       {},
       R"({"name":"Ann","tags":["a","b"],"age":31,"score":1.5,"neg":-4,"ok":true,"none":null,)"
       R"("deep":{"x":{"y":[{}]}}})"},
      {R"({"id":8,"op":"set","table":"t","key":"k","value":null})",
       Op::kSet,
       8,
       "t",
       "k",
       {},
       "null"},
      {R"({"id":8,"op":"set","table":"t","key":"k","value":"s"})",
       Op::kSet,
       8,
       "t",
       "k",
       {},
       R"("s")"},
      {R"({"id":9,"op":"merge","table":"t","key":"k","patch":{"a":null,"b":{"c":1}}})",
       Op::kMerge,
       9,
       "t",
       "k",
       {},
       R"({"a":null,"b":{"c":1}})"},
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":5})", Op::kAdd, 10, "t", "k", {}, "5"},
      {R"({"id":10,"op":"add","table":"t","key":"k","path":["a","b"],"delta":-3})",
       Op::kAdd,
       10,
       "t",
       "k",
       {"a", "b"},
       "-3"},
      {R"({"id":10,"op":"add","table":"t","key":"k","path":[],"delta":0})",
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "0"},
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":-0})",
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "-0"},
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":2.5})",
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "2.5"},
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":-0.0})",
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "-0.0"},
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":123456789012345678})",  // 18 digits
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "123456789012345678"},
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":-999999999999999999})",
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "-999999999999999999"},
      // 19 and 20 digits leave the small-integer path for the parser.
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":-9223372036854775808})",
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "-9223372036854775808"},
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":18446744073709551615})",
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "18446744073709551615"},
      {R"({"id":10,"op":"add","table":"t","key":"k","delta":99999999999999999999})",
       Op::kAdd,
       10,
       "t",
       "k",
       {},
       "99999999999999999999"},
      // Whitespace everywhere JSON allows it; members in another order.
      {" \t\r\n{ \"key\" :\n\"k\" ,\t\"id\"\r: 11 , \"table\" : \"t\" , \"op\" : \"set\" ,"
       " \"value\" : [ 1 , { \"a\" : [ ] } , \"x\" ] \n} \r\n\t ",
       Op::kSet,
       11,
       "t",
       "k",
       {},
       R"([1,{"a":[]},"x"])"},
      {"{ \"id\" : 12 , \"op\" : \"add\" , \"table\" : \"t\" , \"key\" : \"k\" , \"path\" : [ "
       "\"a\" , \"b\" ] , \"delta\" : -7 }",
       Op::kAdd,
       12,
       "t",
       "k",
       {"a", "b"},
       "-7"},
      // Unknown members are validated and ignored, escapes in their values
      // and members of other ops included.
      {R"({"id":13,"trace":{"span":[1,2,{"x":"\n\"y\""}],"n":-1.25},"op":"get","table":"t",)"
       R"("key":"k","value":5,"data":[1],"patch":{},"delta":"x","path":7,"user":"u"})",
       Op::kGet,
       13,
       "t",
       "k",
       {},
       ""},
      {R"({"id":13,"op":"echo","data":1,"table":5,"key":[],"x":"a\\b"})",
       Op::kEcho,
       13,
       "",
       "",
       {},
       "1"},
      // Repeated unknown members of the request are ignored by both.
      {R"({"id":13,"op":"ping","x":1,"x":[2]})", Op::kPing, 13, "", "", {}, ""},
      {R"({"id":13,"op":"echo","data":)" + ManyMembers(64) + "}",
       Op::kEcho,
       13,
       "",
       "",
       {},
       ManyMembers(64)},
      // Multibyte UTF-8 (2, 3 and 4 bytes) in keys, values and member names.
      {"{\"id\":14,\"op\":\"set\",\"table\":\"t\",\"key\":\"caf\xC3\xA9-\xD0\xBA\xD0\xBB-"
       "\xE9\x94\xAE-\xF0\x9F\x98\x80\",\"\xC3\xA9\":1,\"value\":{\"\xE2\x82\xAC\":"
       "\"\xF4\x8F\xBF\xBF\xEF\xBF\xBF\xE0\xA0\x80\xF0\x90\x80\x80\"}}",
       Op::kSet,
       14,
       "t",
       "caf\xC3\xA9-\xD0\xBA\xD0\xBB-\xE9\x94\xAE-\xF0\x9F\x98\x80",
       {},
       "{\"\xE2\x82\xAC\":\"\xF4\x8F\xBF\xBF\xEF\xBF\xBF\xE0\xA0\x80\xF0\x90\x80\x80\"}"},
      {"{\"id\":15,\"op\":\"add\",\"table\":\"t\",\"key\":\"\xC2\x80\",\"path\":[\"\xC3\xA9\","
       "\"\"],\"delta\":1}",
       Op::kAdd,
       15,
       "t",
       "\xC2\x80",
       {"\xC3\xA9", ""},
       "1"},
  };
}

TEST(RequestScannerTest, TakesTypicalFrames) {
  for (const TakenCase& c : TakenCases()) {
    SCOPED_TRACE(Escaped(c.text));
    EXPECT_TRUE(TakenAndAgrees(c.text));
    Request r;
    ASSERT_TRUE(ScanRequest(c.text, doc::Limits{}, &r));
    EXPECT_EQ(r.op, c.op);
    EXPECT_EQ(r.id, c.id);
    EXPECT_EQ(r.table, c.table);
    EXPECT_EQ(r.key, c.key);
    EXPECT_EQ(r.path, c.path);
    if (c.value.empty()) {
      EXPECT_TRUE(r.value.is_null());
      EXPECT_TRUE(r.raw_value.empty());
      continue;
    }
    Result<doc::Value> expected = doc::Parse(c.value);
    ASSERT_OK(expected);
    // echo and set keep the member as text; merge and add parse it.
    Result<doc::Value> raw = doc::Parse(r.raw_value);
    ASSERT_OK(raw);
    EXPECT_TRUE(SameValue(*raw, *expected)) << doc::Dump(*raw);
    if (c.op == Op::kEcho || c.op == Op::kSet) {
      EXPECT_TRUE(r.value.is_null()) << doc::Dump(r.value);
    } else {
      EXPECT_TRUE(SameValue(r.value, *expected))
          << doc::Dump(r.value) << " of type " << r.value.type_name();
    }
  }
}

TEST(RequestScannerTest, RawValueIsTheMemberText) {
  const std::string text = R"({"id":1,"op":"echo","data": [ 1 , {"a" : "b"} ] ,"x":0})";
  Request r;
  ASSERT_TRUE(ScanRequest(text, doc::Limits{}, &r));
  EXPECT_EQ(r.raw_value, R"([ 1 , {"a" : "b"} ])");
  EXPECT_EQ(r.raw_value.data(), text.data() + text.find('['));

  const std::string add = R"({"id":1,"op":"add","table":"t","key":"k","delta": -12 })";
  Request a;
  ASSERT_TRUE(ScanRequest(add, doc::Limits{}, &a));
  EXPECT_EQ(a.raw_value, "-12");

  const std::string set = R"({"id":1,"op":"set","table":"t","key":"k","value":{"a":[1]}})";
  Request s;
  ASSERT_TRUE(ScanRequest(set, doc::Limits{}, &s));
  EXPECT_EQ(s.raw_value, R"({"a":[1]})");
}

TEST(RequestScannerTest, CompactJsonDropsWhitespaceOutsideStrings) {
  EXPECT_EQ(CompactJson(" [ 1 ,\t{ \"a b\" :\r\n\"c \\\" d\\\\\" } ] "),
            R"([1,{"a b":"c \" d\\"}])");
  EXPECT_EQ(CompactJson("\"\""), "\"\"");
  EXPECT_EQ(CompactJson(" -0 "), "-0");
}

// ---------------------------------------------------------------------------
// Frames the fast path leaves to DecodeRequest.

enum class Full { kAccepts, kRefuses };

struct RefusedCase {
  std::string text;
  Full full;  // what DecodeRequest does with it (documents why it is refused)
};

std::string Frame(std::string_view members) {
  return "{\"id\":1,\"op\":\"set\",\"table\":\"t\"," + std::string(members) + "}";
}

std::vector<RefusedCase> RefusedCases() {
  const std::string long_key(doc::kMaxKeyBytes + 1, 'k');
  return {
      // Ops the fast path does not know.
      {R"({"id":1,"op":"login","user":"u","secret":"s"})", Full::kAccepts},
      {R"({"id":1,"op":"all","table":"t"})", Full::kAccepts},
      {R"({"id":1,"op":"stats"})", Full::kAccepts},
      {R"({"id":1,"op":"push","device":"d","changes":[{"seq":1,"table":"t","key":"k",)"
       R"("group":"g","value":{"a":1}}]})",
       Full::kAccepts},
      {R"({"id":1,"op":"pull","since":0})", Full::kAccepts},
      {R"({"id":1,"op":"bootstrap"})", Full::kAccepts},
      {R"({"id":1,"op":"wait","since":0})", Full::kAccepts},
      {R"({"id":1,"op":"nope"})", Full::kRefuses},
      {R"({"id":1,"op":"GET","table":"t","key":"k"})", Full::kRefuses},
      // Duplicate members: the last one wins in DecodeRequest.
      {R"({"id":1,"id":2,"op":"ping"})", Full::kAccepts},
      {R"({"id":1,"op":"get","op":"ping"})", Full::kAccepts},
      {R"({"id":1,"op":"get","table":"t","key":"a","key":"b"})", Full::kAccepts},
      {R"({"id":1,"op":"echo","data":1,"data":2})", Full::kAccepts},
      {R"({"id":1,"op":"add","table":"t","key":"k","delta":1,"delta":2})", Full::kAccepts},
      // \u escapes anywhere.
      {R"({"id":1,"op":"get","table":"t","key":"\u00e9"})", Full::kAccepts},
      {R"({"id":1,"op":"get","table":"\u0074","key":"k"})", Full::kAccepts},
      {R"({"id":1,"op":"echo","data":"\u00e9"})", Full::kAccepts},
      {R"({"id":1,"op":"echo","data":"\ud83d\ude00"})", Full::kAccepts},
      {R"({"id":1,"op":"echo","data":"\ud800"})", Full::kRefuses},
      {R"({"id":1,"op":"echo","data":"\udc00\ud800"})", Full::kRefuses},
      {R"({"id":1,"op":"echo","data":"\u0000"})", Full::kAccepts},
      {R"({"id":1,"op":"ping","x":"\u12"})", Full::kRefuses},
      {R"({"id":1,"op":"set","table":"t","key":"k","value":{"\u0061":1}})", Full::kAccepts},
      // Repeated or escaped names in nested objects, where the full parser
      // keeps the last member; objects too large to check cheaply.
      {R"({"id":1,"op":"echo","data":{"a":1,"a":2}})", Full::kAccepts},
      {R"({"id":1,"op":"set","table":"t","key":"k","value":{"b":{"x":1,"y":0,"x":2}}})",
       Full::kAccepts},
      {R"({"id":1,"op":"merge","table":"t","key":"k","patch":{"\n":1}})", Full::kAccepts},
      {R"({"id":1,"op":"get","table":"t","key":"k","x":[{"a":1,"a":1}]})", Full::kAccepts},
      {R"({"id":1,"op":"echo","data":)" + ManyMembers(65) + "}", Full::kAccepts},
      // Escapes in member names, op, table or key.
      {R"({"\u0069d":1,"op":"ping"})", Full::kAccepts},
      {R"({"id":1,"o\u0070":"ping"})", Full::kAccepts},
      {R"({"id":1,"op":"ping","x\ny":1})", Full::kAccepts},
      {R"({"id":1,"op":"ping","\\":1})", Full::kAccepts},
      {R"({"id":1,"op":"p\u0069ng"})", Full::kAccepts},
      {R"({"id":1,"op":"get","table":"t","key":"a\"b"})", Full::kAccepts},
      {R"({"id":1,"op":"get","table":"t","key":"a\/b"})", Full::kAccepts},
      {R"({"id":1,"op":"get","table":"t\/","key":"k"})", Full::kRefuses},
      {R"({"id":1,"op":"get","table":"t","key":"a\x"})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k","path":["a\nb"],"delta":1})", Full::kAccepts},
      // Invalid UTF-8.
      {Frame("\"key\":\"\xC0\x80\",\"value\":1"), Full::kRefuses},          // overlong NUL
      {Frame("\"key\":\"\xC1\xBF\",\"value\":1"), Full::kRefuses},          // overlong
      {Frame("\"key\":\"\xE0\x80\x80\",\"value\":1"), Full::kRefuses},      // overlong
      {Frame("\"key\":\"\xF0\x80\x80\x80\",\"value\":1"), Full::kRefuses},  // overlong
      {Frame("\"key\":\"\xED\xA0\x80\",\"value\":1"), Full::kRefuses},      // surrogate
      {Frame("\"key\":\"\xED\xBF\xBF\",\"value\":1"), Full::kRefuses},      // surrogate
      {Frame("\"key\":\"\xF4\x90\x80\x80\",\"value\":1"), Full::kRefuses},  // > U+10FFFF
      {Frame("\"key\":\"\xF5\x80\x80\x80\",\"value\":1"), Full::kRefuses},
      {Frame("\"key\":\"\xFF\",\"value\":1"), Full::kRefuses},
      {Frame("\"key\":\"\x80\",\"value\":1"), Full::kRefuses},   // lone continuation
      {Frame("\"key\":\"a\xC3\",\"value\":1"), Full::kRefuses},  // truncated
      {Frame("\"key\":\"a\xE2\x82\",\"value\":1"), Full::kRefuses},
      {Frame("\"key\":\"a\xF0\x9F\x98\",\"value\":1"), Full::kRefuses},
      {Frame("\"key\":\"k\",\"value\":\"\xE2\x28\xA1\""), Full::kRefuses},
      {Frame("\"key\":\"k\",\"value\":1,\"x\":\"\xC3\""), Full::kRefuses},
      {Frame("\"key\":\"k\",\"value\":1,\"\xED\xA0\x80\":1"), Full::kRefuses},
      {"{\"id\":1,\"op\":\"echo\",\"data\":\"\xC3", Full::kRefuses},  // ends mid-sequence
      {"{\"id\":1,\"op\":\"ping\"}\xC3\xA9", Full::kRefuses},
      // Control characters in strings.
      {Frame("\"key\":\"a\tb\",\"value\":1"), Full::kRefuses},
      {Frame("\"key\":\"a\nb\",\"value\":1"), Full::kRefuses},
      {Frame("\"key\":\"k\",\"value\":\"\x1F\""), Full::kRefuses},
      {Frame(std::string("\"key\":\"k\",\"value\":\"") + '\0' + "\""), Full::kRefuses},
      // Numbers with an exponent.
      {R"({"id":1e2,"op":"ping"})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k","delta":1e2})", Full::kAccepts},
      {R"({"id":1,"op":"add","table":"t","key":"k","delta":1E-2})", Full::kAccepts},
      {R"({"id":1,"op":"add","table":"t","key":"k","delta":1e400})", Full::kRefuses},
      {R"({"id":1,"op":"echo","data":[2.5e+3]})", Full::kAccepts},
      {R"({"id":1,"op":"ping","x":2e0})", Full::kAccepts},
      // Numbers too long for the scanner.
      {R"({"id":1,"op":"echo","data":0.1234567890123456789012})", Full::kAccepts},
      {R"({"id":1,"op":"add","table":"t","key":"k","delta":-123456789012345678901})",
       Full::kAccepts},
      // Bad numbers.
      {R"({"id":1,"op":"echo","data":01})", Full::kRefuses},
      {R"({"id":1,"op":"echo","data":-})", Full::kRefuses},
      {R"({"id":1,"op":"echo","data":1.})", Full::kRefuses},
      {R"({"id":1,"op":"echo","data":.5})", Full::kRefuses},
      {R"({"id":1,"op":"echo","data":+1})", Full::kRefuses},
      {R"({"id":1,"op":"echo","data":[1-2]})", Full::kRefuses},
      // Ids the fast path does not take.
      {R"({"id":-1,"op":"ping"})", Full::kRefuses},
      {R"({"id":-0,"op":"ping"})", Full::kRefuses},
      {R"({"id":1.0,"op":"ping"})", Full::kRefuses},
      {R"({"id":12345678901234567890,"op":"ping"})", Full::kAccepts},  // 20 digits, fits
      {R"({"id":18446744073709551615,"op":"ping"})", Full::kAccepts},
      {R"({"id":18446744073709551616,"op":"ping"})", Full::kRefuses},
      {R"({"id":01,"op":"ping"})", Full::kRefuses},
      {R"({"id":"1","op":"ping"})", Full::kRefuses},
      {R"({"id":null,"op":"ping"})", Full::kRefuses},
      {R"({"op":"ping"})", Full::kRefuses},
      // Missing or wrong-typed fields.
      {R"({"id":1})", Full::kRefuses},
      {R"({"id":1,"op":1})", Full::kRefuses},
      {R"({"id":1,"op":"get","table":"t"})", Full::kRefuses},
      {R"({"id":1,"op":"get","key":"k"})", Full::kRefuses},
      {R"({"id":1,"op":"get","table":"t","key":5})", Full::kRefuses},
      {R"({"id":1,"op":"get","table":"bad name","key":"k"})", Full::kRefuses},
      {R"({"id":1,"op":"get","table":"","key":"k"})", Full::kRefuses},
      {R"({"id":1,"op":"get","table":"t","key":""})", Full::kRefuses},
      {R"({"id":1,"op":"get","table":"t","key":")" + long_key + "\"}", Full::kRefuses},
      {R"({"id":1,"op":"set","table":"t","key":"k"})", Full::kRefuses},
      {R"({"id":1,"op":"merge","table":"t","key":"k","value":{}})", Full::kRefuses},
      {R"({"id":1,"op":"echo"})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k"})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k","delta":"1"})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k","delta":null})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k","path":"a","delta":1})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k","path":[1],"delta":1})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k","path":null,"delta":1})", Full::kRefuses},
      {R"({"id":1,"op":"add","table":"t","key":"k","path":[["a"]],"delta":1})", Full::kRefuses},
      // Not one JSON object.
      {"", Full::kRefuses},
      {" \n", Full::kRefuses},
      {"[]", Full::kRefuses},
      {"\"ping\"", Full::kRefuses},
      {"null", Full::kRefuses},
      {R"({"id":1,"op":"ping")", Full::kRefuses},
      {R"({"id":1,"op":"ping",})", Full::kRefuses},
      {R"({"id":1,,"op":"ping"})", Full::kRefuses},
      {R"({"id":1 "op":"ping"})", Full::kRefuses},
      {R"({"id":1,"op":"ping"}x)", Full::kRefuses},
      {R"({"id":1,"op":"ping"}})", Full::kRefuses},
      {R"({"id":1,"op":"ping"} {})", Full::kRefuses},
      {R"({"id":1,"op":"ping"},)", Full::kRefuses},
      {R"({"id":1,"op":"ping","x":tru})", Full::kRefuses},
      {R"({"id":1,"op":"ping","x":nul})", Full::kRefuses},
      {R"({"id":1,"op":"ping","x":[1,]})", Full::kRefuses},
      {R"({"id":1,"op":"ping","x":{"a"}})", Full::kRefuses},
      {R"({"id":1,"op":"ping","x":'a'})", Full::kRefuses},
      {"{\"id\":1,\"op\":\"ping\"}\f", Full::kRefuses},            // not JSON whitespace
      {"\xEF\xBB\xBF{\"id\":1,\"op\":\"ping\"}", Full::kAccepts},  // nlohmann skips a BOM
      // nlohmann stops at a NUL byte as if the text ended there.
      {std::string("{\"id\":1,\"op\":\"ping\"}\0", 21), Full::kAccepts},
      {std::string("{\"id\":1,\"op\":\"ping\"}\0junk", 25), Full::kAccepts},
  };
}

TEST(RequestScannerTest, LeavesUnusualFramesToTheFullDecoder) {
  for (const RefusedCase& c : RefusedCases()) {
    SCOPED_TRACE(Escaped(c.text));
    Request r;
    EXPECT_FALSE(ScanRequest(c.text, doc::Limits{}, &r));
    std::optional<uint64_t> id;
    Result<Request> full = DecodeRequest(c.text, doc::Limits{}, &id);
    EXPECT_EQ(full.ok(), c.full == Full::kAccepts) << full.status().ToString();
  }
}

// ---------------------------------------------------------------------------
// Limits.

// `levels` nested arrays around nothing; 0 is a scalar.
std::string Arrays(size_t levels) {
  return levels == 0 ? "0" : std::string(levels, '[') + std::string(levels, ']');
}

// `levels` nested objects around a number.
std::string Objects(size_t levels) {
  std::string out;
  for (size_t i = 0; i < levels; ++i) out += "{\"a\":";
  out += "1";
  out += std::string(levels, '}');
  return out;
}

TEST(RequestScannerTest, DepthLimitMatchesTheFullDecoder) {
  for (const size_t max_depth : {1, 2, 3, 5, 64}) {
    const doc::Limits limits{.max_depth = max_depth};
    // The request object is level 1, so a member nesting `levels` deep puts
    // the frame at 1 + levels.
    for (size_t levels = max_depth >= 2 ? max_depth - 2 : 0; levels <= max_depth + 1; ++levels) {
      const bool fits = 1 + levels <= max_depth;
      const std::string frames[] = {
          R"({"id":1,"op":"echo","data":)" + Arrays(levels) + "}",
          R"({"id":1,"op":"echo","data":)" + Objects(levels) + "}",
          R"({"id":1,"op":"set","table":"t","key":"k","value":)" + Objects(levels) + "}",
          R"({"id":1,"op":"merge","table":"t","key":"k","patch":)" + Arrays(levels) + "}",
          R"({"id":1,"op":"get","table":"t","key":"k","x":)" + Arrays(levels) + "}",
      };
      for (const std::string& frame : frames) {
        SCOPED_TRACE("max_depth " + std::to_string(max_depth) + ": " + frame);
        std::optional<uint64_t> id;
        Result<Request> full = DecodeRequest(frame, limits, &id);
        EXPECT_EQ(full.ok(), fits) << full.status().ToString();
        if (!full.ok()) {
          EXPECT_EQ(full.status().code(), StatusCode::kTooLarge);
        }
        bool taken = false;
        EXPECT_EQ(Disagreement(frame, limits, &taken), "");
        EXPECT_EQ(taken, fits);
      }
    }
    // Each element of add's path may add a level to the stored document.
    for (size_t elements = 0; elements <= max_depth; ++elements) {
      std::string path;
      for (size_t i = 0; i < elements; ++i) path += (i == 0 ? "\"p\"" : ",\"p\"");
      const std::string frame =
          R"({"id":1,"op":"add","table":"t","key":"k","path":[)" + path + R"(],"delta":1})";
      SCOPED_TRACE("max_depth " + std::to_string(max_depth) + ": " + frame);
      // The path array itself is level 2.
      const bool fits = max_depth >= 2 && elements < max_depth;
      std::optional<uint64_t> id;
      EXPECT_EQ(DecodeRequest(frame, limits, &id).ok(), fits);
      bool taken = false;
      EXPECT_EQ(Disagreement(frame, limits, &taken), "");
      EXPECT_EQ(taken, fits);
    }
  }
}

TEST(RequestScannerTest, SizeLimitMatchesTheFullDecoder) {
  const std::string frame = R"({"id":1,"op":"set","table":"t","key":"k","value":[1,2,3]})";
  const doc::Limits exact{.max_document_bytes = frame.size()};
  EXPECT_TRUE(TakenAndAgrees(frame, exact));
  const doc::Limits under{.max_document_bytes = frame.size() - 1};
  Request r;
  EXPECT_FALSE(ScanRequest(frame, under, &r));
  std::optional<uint64_t> id;
  EXPECT_FALSE(DecodeRequest(frame, under, &id).ok());
}

// ---------------------------------------------------------------------------
// Differential test on mutated frames.

}  // namespace
}  // namespace skiff::server::internal
