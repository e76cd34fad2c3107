#include "doc/path.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "test/status_matchers.h"

namespace skiff::doc {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(AddAtPathTest, CreatesMissingObjectsAndStartsFromZero) {
  Value doc;  // null: becomes an object
  Result<Value> r = AddAtPath(doc, {"stats", "daily", "logins"}, 5);
  ASSERT_OK(r);
  EXPECT_EQ(*r, 5);
  EXPECT_EQ(doc, Value::parse(R"({"stats":{"daily":{"logins":5}}})"));

  r = AddAtPath(doc, {"stats", "daily", "logins"}, -7);
  ASSERT_OK(r);
  EXPECT_EQ(*r, -2);
  r = AddAtPath(doc, {"stats", "weekly"}, 1);
  ASSERT_OK(r);
  EXPECT_EQ(doc, Value::parse(R"({"stats":{"daily":{"logins":-2},"weekly":1}})"));
}

TEST(AddAtPathTest, KeepsSiblingsUntouched) {
  Value doc = Value::parse(R"({"a":{"x":"keep","n":1},"b":[1,2]})");
  ASSERT_OK(AddAtPath(doc, {"a", "n"}, 2));
  EXPECT_EQ(doc, Value::parse(R"({"a":{"x":"keep","n":3},"b":[1,2]})"));
}

TEST(AddAtPathTest, EmptyPathAddsToTheDocumentItself) {
  Value doc = 40;
  Result<Value> r = AddAtPath(doc, {}, 2);
  ASSERT_OK(r);
  EXPECT_EQ(doc, 42);
  Value null_doc;
  ASSERT_OK(AddAtPath(null_doc, {}, 3));
  EXPECT_EQ(null_doc, 3);
}

TEST(AddAtPathTest, NullMembersCountAsMissing) {
  Value doc = Value::parse(R"({"a":null,"b":{"c":null}})");
  ASSERT_OK(AddAtPath(doc, {"a", "x"}, 1));
  ASSERT_OK(AddAtPath(doc, {"b", "c"}, 2));
  EXPECT_EQ(doc, Value::parse(R"({"a":{"x":1},"b":{"c":2}})"));
}

TEST(AddAtPathTest, IntegersStayExact) {
  Value doc = {{"n", kMax - 10}};
  Result<Value> r = AddAtPath(doc, {"n"}, 10);
  ASSERT_OK(r);
  EXPECT_TRUE(r->is_number_integer());
  EXPECT_FALSE(r->is_number_float());
  EXPECT_EQ(r->get<int64_t>(), kMax);  // a double would have rounded this
  EXPECT_EQ(doc["n"].get<int64_t>(), kMax);

  // Parsed non-negative integers are unsigned inside nlohmann; they still add
  // as integers.
  Value parsed = Value::parse(R"({"n":9007199254740993})");
  r = AddAtPath(parsed, {"n"}, 1);
  ASSERT_OK(r);
  EXPECT_EQ(r->get<int64_t>(), 9007199254740994);
  EXPECT_EQ(Dump(parsed), R"({"n":9007199254740994})");
}

TEST(AddAtPathTest, Int64OverflowIsTooLargeAndLeavesDocAlone) {
  Value doc = {{"n", kMax}};
  const Value before = doc;
  Result<Value> r = AddAtPath(doc, {"n"}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  EXPECT_EQ(doc, before);

  Value low = {{"n", kMin}};
  EXPECT_EQ(AddAtPath(low, {"n"}, -1).status().code(), StatusCode::kTooLarge);
  EXPECT_OK(AddAtPath(low, {"n"}, kMax));
  EXPECT_EQ(low["n"], -1);

  // A delta above INT64_MAX cannot be an exact counter step.
  Value zero = {{"n", 0}};
  EXPECT_EQ(AddAtPath(zero, {"n"}, Value(uint64_t{1} << 63)).status().code(),
            StatusCode::kTooLarge);
}

TEST(AddAtPathTest, AnIntegerDeltaPast64BitsNeverTurnsTheCounterIntoADouble) {
  // 2^64 and 1e19 parse as doubles (no 64-bit integer holds them); the
  // counter stays an integer and the add is too_large, like an overflow.
  for (const char* delta : {"18446744073709551616", "1e19", "-9223372036854775809", "1e300"}) {
    Value doc = {{"n", 5}};
    const Value before = doc;
    Result<Value> r = AddAtPath(doc, {"n"}, Value::parse(delta));
    EXPECT_EQ(r.status().code(), StatusCode::kTooLarge) << delta;
    EXPECT_EQ(doc, before) << delta;
    EXPECT_TRUE(doc["n"].is_number_integer());
  }
  // A missing counter is created from 0 by the same rule.
  Value empty = Value::object();
  EXPECT_EQ(AddAtPath(empty, {"n"}, Value::parse("18446744073709551616")).status().code(),
            StatusCode::kTooLarge);
  // A delta written with a zero fraction is still an integer step.
  Value doc = {{"n", kMax - 3}};
  Result<Value> r = AddAtPath(doc, {"n"}, Value::parse("3.0"));
  ASSERT_OK(r);
  EXPECT_TRUE(r->is_number_integer());
  EXPECT_EQ(r->get<int64_t>(), kMax);
}

TEST(AddAtPathTest, FractionalOperandMakesADouble) {
  Value doc = {{"n", 1}};
  Result<Value> r = AddAtPath(doc, {"n"}, 0.5);
  ASSERT_OK(r);
  EXPECT_TRUE(r->is_number_float());
  EXPECT_DOUBLE_EQ(r->get<double>(), 1.5);
  r = AddAtPath(doc, {"n"}, 2);
  ASSERT_OK(r);
  EXPECT_TRUE(r->is_number_float());
  EXPECT_DOUBLE_EQ(doc["n"].get<double>(), 3.5);

  Value huge = {{"n", 1.7e308}};
  EXPECT_EQ(AddAtPath(huge, {"n"}, 1.7e308).status().code(), StatusCode::kTooLarge);
  EXPECT_DOUBLE_EQ(huge["n"].get<double>(), 1.7e308);
}

TEST(AddAtPathTest, TypeMismatchAtEachPositionNamesThePath) {
  const Value original = Value::parse(R"({"a":{"b":{"c":"text"}},"arr":[1],"n":5})");
  struct Case {
    Path path;
    std::string mentions;
  };
  const Case cases[] = {
      {{"arr", "x"}, "path 'arr' is array"},     // an array on the way
      {{"n", "x", "y"}, "path 'n' is number"},   // a number on the way
      {{"a", "b", "c"}, "the value is string"},  // the target is text
      {{"a", "b", "c", "d"}, "path 'a.b.c'"},    // text on the way, deeper
      {{"a"}, "the value is object"},            // the target is an object
  };
  for (const Case& c : cases) {
    Value doc = original;
    Result<Value> r = AddAtPath(doc, c.path, 1);
    ASSERT_FALSE(r.ok()) << PathToString(c.path);
    EXPECT_EQ(r.status().code(), StatusCode::kTypeMismatch);
    EXPECT_NE(r.status().message().find(c.mentions), std::string::npos) << r.status();
    EXPECT_EQ(doc, original);
  }

  Value array_doc = Value::array();
  Result<Value> r = AddAtPath(array_doc, {"x"}, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kTypeMismatch);
  EXPECT_NE(r.status().message().find("the document root is array"), std::string::npos);
  Value bool_doc = true;
  EXPECT_EQ(AddAtPath(bool_doc, {}, 1).status().code(), StatusCode::kTypeMismatch);
  EXPECT_EQ(bool_doc, true);
}

TEST(AddAtPathTest, DeltaMustBeANumber) {
  Value doc = {{"n", 1}};
  for (const Value& delta : {Value("1"), Value(true), Value(nullptr), Value::array(),
                             Value::object(), Value(std::numeric_limits<double>::infinity())}) {
    Result<Value> r = AddAtPath(doc, {"n"}, delta);
    ASSERT_FALSE(r.ok()) << delta;
    EXPECT_EQ(r.status().code(), StatusCode::kBadRequest);
  }
  EXPECT_EQ(doc, Value({{"n", 1}}));
}

TEST(PathToStringTest, JoinsWithDots) {
  EXPECT_EQ(PathToString({}), "");
  EXPECT_EQ(PathToString({"a"}), "a");
  EXPECT_EQ(PathToString({"a", "b", "c"}), "a.b.c");
}

}  // namespace
}  // namespace skiff::doc
