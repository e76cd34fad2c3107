#include "doc/internal/msgpack.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/doc_generator.h"

#include "test/status_matchers.h"

namespace skiff::doc::internal {
namespace {

std::string Encode(const Value& v) {
  std::string out;
  AppendMsgpack(v, out);
  return out;
}

std::string Nlohmann(const Value& v) {
  const std::vector<uint8_t> bytes = Value::to_msgpack(v);
  return std::string(bytes.begin(), bytes.end());
}

TEST(MsgpackTest, EncodesTheSmallestForms) {
  EXPECT_EQ(Encode(nullptr), "\xC0");
  EXPECT_EQ(Encode(true), "\xC3");
  EXPECT_EQ(Encode(5), "\x05");
  EXPECT_EQ(Encode(-1), "\xFF");
  EXPECT_EQ(Encode(200), "\xCC\xC8");
  EXPECT_EQ(Encode(-200), std::string("\xD1\xFF\x38", 3));
  EXPECT_EQ(Encode(0.5), std::string("\xCA\x3F\x00\x00\x00", 5));  // float32 is exact
  EXPECT_EQ(Encode(0.1).size(), 9u);                               // float64 is needed
  EXPECT_EQ(Encode("hi"), "\xA2hi");
  EXPECT_EQ(Encode(Value::array()), "\x90");
  EXPECT_EQ(Encode(Value::object()), "\x80");
}

// The encoder must write standard MessagePack: byte for byte what nlohmann's
// own writer makes, over every kind of value the generator produces.
TEST(MsgpackTest, MatchesNlohmannByteForByte) {
  support::DocGenerator gen(11);
  std::vector<Value> values = {Value(std::numeric_limits<int64_t>::min()),
                               Value(std::numeric_limits<uint64_t>::max()),
                               Value(-33),
                               Value(-32),
                               Value(127),
                               Value(128),
                               Value(65535),
                               Value(65536),
                               Value(std::string(31, 'a')),
                               Value(std::string(32, 'a')),
                               Value(std::string(70000, 'a')),
                               Value(std::numeric_limits<double>::infinity()),
                               Value(-0.0),
                               Value(1e300),
                               Value::binary({1, 2, 3}),
                               Value::binary({1, 2, 3, 4}, 7),
                               Value::binary({1, 2, 3}, 200)};
  Value wide_array = Value::array();
  Value wide_object = Value::object();
  for (int i = 0; i < 70000; ++i) {
    wide_array.push_back(i);
    if (i < 300) wide_object[std::to_string(i)] = i;
  }
  values.push_back(wide_array);
  values.push_back(wide_object);
  for (int i = 0; i < 500; ++i) values.push_back(gen.Random(8));
  for (int i = 0; i < 20; ++i) values.push_back(gen.Guild());
  for (const Value& v : values) {
    ASSERT_EQ(Encode(v), Nlohmann(v)) << v.dump(-1, ' ', false, Value::error_handler_t::replace);
  }
}

TEST(MsgpackTest, DecodesWhatNlohmannWrites) {
  support::DocGenerator gen(12);
  for (int i = 0; i < 300; ++i) {
    const Value v = i % 3 == 0 ? gen.Guild() : gen.Random(8);
    Result<Value> back = DecodeMsgpack(Nlohmann(v));
    ASSERT_OK(back);
    ASSERT_EQ(*back, v);
  }
}

TEST(MsgpackTest, KeepsBinaryAndItsSubtype) {
  for (const Value& v : {Value::binary({}), Value::binary({9}, 3), Value::binary({1, 2, 3}, 255),
                         Value::binary(std::vector<uint8_t>(300, 7))}) {
    Result<Value> back = DecodeMsgpack(Encode(v));
    ASSERT_OK(back);
    EXPECT_EQ(*back, v);
  }
}

TEST(MsgpackTest, RejectsMalformedBytes) {
  const std::string cases[] = {
      "",                                      // nothing
      "\xC1",                                  // never used
      "\x92\x01",                              // array of two, one present
      std::string("\xDD\xFF\xFF\xFF\xFF", 5),  // four billion items, no data
      std::string("\xDF\x7F\xFF\xFF\xFF", 5),  // two billion members, no data
      std::string("\xDB\x00\x10\x00\x00"
                  "abc",
                  8),  // string longer than its data
      "\x81\x01\x02",  // map key that is not a string
      "\x01\x02",      // trailing byte
      "\xCB\x00\x00",  // truncated double
  };
  for (const std::string& bytes : cases) {
    Result<Value> v = DecodeMsgpack(bytes);
    ASSERT_FALSE(v.ok()) << testing::PrintToString(bytes);
    EXPECT_EQ(v.status().code(), StatusCode::kInternal);
  }
}

TEST(MsgpackTest, RefusesNestingPastTheLimitWithoutOverflowingTheStack) {
  const std::string deep(1'000'000, '\x91');  // arrays of one array of one ...
  EXPECT_EQ(DecodeMsgpack(deep).status().code(), StatusCode::kInternal);

  std::string at_limit(kMaxPackedDepth, '\x91');
  at_limit.back() = '\x90';
  EXPECT_OK(DecodeMsgpack(at_limit));
  std::string past_limit(kMaxPackedDepth + 1, '\x91');
  past_limit.back() = '\x90';
  EXPECT_FALSE(DecodeMsgpack(past_limit).ok());
}

}  // namespace
}  // namespace skiff::doc::internal
