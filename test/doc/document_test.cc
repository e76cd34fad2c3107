#include "doc/document.h"

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/status_matchers.h"

namespace skiff::doc {
namespace {

TEST(ParseTest, ParsesEveryKindOfValue) {
  Result<Value> v = Parse(R"({"a":[1,-2,3.5,"x",true,false,null,{}],"b":{"c":[]}})");
  ASSERT_OK(v);
  EXPECT_EQ((*v)["a"][0], 1);
  EXPECT_EQ((*v)["a"][1], -2);
  EXPECT_EQ((*v)["a"][2], 3.5);
  EXPECT_EQ((*v)["a"][3], "x");
  EXPECT_TRUE((*v)["a"][7].is_object());
  EXPECT_TRUE((*v)["b"]["c"].is_array());

  for (const char* scalar : {"0", "\"\"", "null", "true", " 17 ", "-1e300"}) {
    EXPECT_OK(Parse(scalar)) << scalar;
  }
}

TEST(ParseTest, KeepsUnicode) {
  Result<Value> v = Parse(R"({"name":"Drä 東京 🎮","esc":"\u00e9\ud83c\udfae"})");
  ASSERT_OK(v);
  EXPECT_EQ((*v)["name"], "Drä 東京 🎮");
  EXPECT_EQ((*v)["esc"], "é🎮");
}

TEST(ParseTest, MalformedTextIsBadRequestWithOffset) {
  struct Case {
    std::string text;
    std::string offset;
  };
  const Case cases[] = {
      {R"({"a":1,})", "byte 7:"},  // trailing comma: the '}' is wrong
      {R"([1,2)", "byte 4:"},      // ends early: the offset is the end
      {R"({"a" 1})", "byte 5:"},   // missing colon
      {"[1] 2", "byte 4:"},        // trailing content
      {"", "byte 0:"},             // nothing at all
      {"tru", "byte 3:"},          // bad literal
  };
  for (const Case& c : cases) {
    Result<Value> v = Parse(c.text);
    ASSERT_FALSE(v.ok()) << c.text;
    EXPECT_EQ(v.status().code(), StatusCode::kBadRequest) << c.text;
    EXPECT_NE(v.status().message().find(c.offset), std::string::npos)
        << c.text << " -> " << v.status().message();
  }
}

TEST(ParseTest, NumberTooLargeForADoubleIsBadRequest) {
  Result<Value> v = Parse("[1, 1e400]");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(v.status().message(), "invalid JSON: number overflow parsing '1e400'");
  // Integers past uint64 are kept, as doubles.
  EXPECT_OK(Parse("99999999999999999999999"));
}

TEST(ParseTest, InvalidUtf8IsBadRequest) {
  for (std::string text :
       {std::string("\"\xff\""), std::string("\"\xC0\xAF\""), std::string("\"\xED\xA0\x80\""),
        std::string("[\"ok\", \"\xE2\x82\"]")}) {
    Result<Value> v = Parse(text);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.status().code(), StatusCode::kBadRequest);
    EXPECT_NE(v.status().message().find("byte"), std::string::npos);
    // The message can go on the wire: it must itself be printable ASCII.
    const std::string message = v.status().message();
    for (char c : message) EXPECT_TRUE(c >= 0x20 && c < 0x7F) << message;
  }
}

TEST(ParseTest, DepthLimitCountsContainers) {
  Limits limits;
  limits.max_depth = 3;
  EXPECT_OK(Parse("[[[1]]]", limits));
  EXPECT_OK(Parse(R"({"a":{"b":[]}})", limits));
  EXPECT_EQ(Parse("[[[[1]]]]", limits).status().code(), StatusCode::kTooLarge);
  EXPECT_EQ(Parse(R"({"a":{"b":[{}]}})", limits).status().code(), StatusCode::kTooLarge);
  // Brackets inside strings, escaped quotes included, are not nesting.
  EXPECT_OK(Parse(R"(["[[[[[", "\"[[[[{{{{", {"k[[[[":"}}"}])", limits));
}

TEST(ParseTest, MillionDeepArrayIsRefusedWithoutRecursion) {
  const std::string deep(1'000'000, '[');
  Result<Value> v = Parse(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kTooLarge);

  std::string closed = deep + std::string(1'000'000, ']');
  EXPECT_EQ(Parse(closed).status().code(), StatusCode::kTooLarge);
  std::string objects;
  for (int i = 0; i < 200'000; ++i) objects += R"({"a":)";
  EXPECT_EQ(Parse(objects).status().code(), StatusCode::kTooLarge);
}

TEST(ParseTest, NoLimitsTakesWhatTheDefaultsRefuse) {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  EXPECT_EQ(Parse(deep).status().code(), StatusCode::kTooLarge);
  Result<Value> v = Parse(deep, kNoLimits);
  ASSERT_OK(v);
  EXPECT_TRUE(v->is_array());
  EXPECT_EQ(Parse("[1,", kNoLimits).status().code(), StatusCode::kBadRequest);
}

TEST(ParseTest, SizeLimitIsTooLarge) {
  Limits limits;
  limits.max_document_bytes = 10;
  EXPECT_OK(Parse(R"({"a":"12"})", limits));  // exactly 10 bytes
  Result<Value> v = Parse(R"({"a":"123"})", limits);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kTooLarge);
}

TEST(ParseTest, MembersComeOutInKeyOrderAndARepeatedKeyKeepsTheLast) {
  Result<Value> v = Parse(R"({"b":1,"a":{"y":2,"x":3},"b":4,"c":[{"q":1,"p":2}]})");
  ASSERT_OK(v);
  EXPECT_EQ(Dump(*v), R"({"a":{"x":3,"y":2},"b":4,"c":[{"p":2,"q":1}]})");
}

// Every object and array is allocated once at its size: the hot form of a
// document carries no spare capacity.
TEST(ParseTest, ContainersHaveNoSpareCapacity) {
  Result<Value> v = Parse(R"({"c":3,"a":[1,2,3,4,5],"b":{"x":[],"y":[[1],[2,3]]},"d":{}})");
  ASSERT_OK(v);
  std::vector<const Value*> pending{&*v};
  while (!pending.empty()) {
    const Value* node = pending.back();
    pending.pop_back();
    if (node->is_array()) {
      const auto& items = node->get_ref<const Value::array_t&>();
      EXPECT_EQ(items.capacity(), items.size()) << Dump(*node);
    } else if (node->is_object()) {
      const auto& members = node->get_ref<const Value::object_t&>();
      EXPECT_EQ(members.capacity(), members.size()) << Dump(*node);
    }
    for (const Value& child : *node) {
      if (child.is_structured()) pending.push_back(&child);
    }
  }
}

// nlohmann's own tree builder would insert each key into the sorted members as
// it came, moving all those after it: 200,000 keys in descending order would
// take on the order of 10^10 moves. Parse sorts each object once.
TEST(ParseTest, AnObjectOfManyKeysInDescendingOrderParsesWhole) {
  constexpr int kKeys = 200'000;
  std::string text = "{";
  for (int i = kKeys - 1; i >= 0; --i) {
    char member[32];
    std::snprintf(member, sizeof member, "\"k%06d\":%d,", i, i);
    text += member;
  }
  text.back() = '}';
  Result<Value> v = Parse(text);
  ASSERT_OK(v);
  ASSERT_EQ(v->size(), static_cast<size_t>(kKeys));
  int expected = 0;
  for (const auto& [key, value] : v->items()) {
    char name[16];
    std::snprintf(name, sizeof name, "k%06d", expected);
    ASSERT_EQ(key, name);
    ASSERT_EQ(value, expected);
    ++expected;
  }
}

TEST(DumpTest, IsCompactAndRoundTrips) {
  const std::string text = R"({"a":[1,-2,3.5,"x\n\"y",true,null],"b":{},"é":"🎮"})";
  Result<Value> v = Parse(text);
  ASSERT_OK(v);
  EXPECT_EQ(Dump(*v), text);
}

TEST(DumpTest, ReplacesInvalidUtf8InsteadOfThrowing) {
  Value v = std::string("bad\xff");
  EXPECT_EQ(Dump(v), "\"bad\xEF\xBF\xBD\"");  // U+FFFD
}

TEST(CheckDepthTest, CountsNestedContainers) {
  EXPECT_OK(CheckDepth(Value(1), 0));
  EXPECT_FALSE(CheckDepth(Value::array(), 0).ok());
  EXPECT_OK(CheckDepth(Value::array(), 1));
  Value v = Value::parse(R"({"a":[1,{"b":[]}],"c":2})");
  EXPECT_OK(CheckDepth(v, 4));
  EXPECT_EQ(CheckDepth(v, 3).code(), StatusCode::kTooLarge);
}

TEST(CheckDepthTest, HandlesValuesBuiltDeeperThanAnyParser) {
  Value v = 1;
  for (int i = 0; i < 100'000; ++i) {
    Value wrapper = Value::array();
    wrapper.push_back(std::move(v));
    v = std::move(wrapper);
  }
  EXPECT_EQ(CheckDepth(v, 64).code(), StatusCode::kTooLarge);
  EXPECT_OK(CheckDepth(v, 100'000));
}

}  // namespace
}  // namespace skiff::doc
