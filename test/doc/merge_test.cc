#include "doc/merge.h"

#include <cstdint>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "test/status_matchers.h"

namespace skiff::doc {
namespace {

Value J(const char* text) { return Value::parse(text); }

// Applies `patch` to `target` and returns the result, failing the test when
// the merge reports an error.
Value Merged(const char* target, const char* patch) {
  Value doc = J(target);
  Status s = MergePatch(doc, J(patch));
  EXPECT_OK(s);
  return doc;
}

TEST(MergePatchTest, ReplacesAddsAndKeepsMembers) {
  EXPECT_EQ(Merged(R"({"name":"old","level":3})", R"({"name":"new","tag":"x"})"),
            J(R"({"name":"new","level":3,"tag":"x"})"));
}

TEST(MergePatchTest, NullDeletesAndMissingNullIsHarmless) {
  EXPECT_EQ(Merged(R"({"a":1,"b":2})", R"({"a":null,"zzz":null})"), J(R"({"b":2})"));
}

TEST(MergePatchTest, ObjectsMergeRecursively) {
  EXPECT_EQ(Merged(R"({"settings":{"locale":"en","afk":300},"x":1})",
                   R"({"settings":{"afk":600,"theme":{"dark":true}}})"),
            J(R"({"settings":{"locale":"en","afk":600,"theme":{"dark":true}},"x":1})"));
  EXPECT_EQ(Merged(R"({"a":{"b":{"c":1,"d":2}}})", R"({"a":{"b":{"c":null}}})"),
            J(R"({"a":{"b":{"d":2}}})"));
}

TEST(MergePatchTest, ArraysAreReplacedNotMerged) {
  EXPECT_EQ(Merged(R"({"roles":[1,2,3]})", R"({"roles":[4]})"), J(R"({"roles":[4]})"));
  EXPECT_EQ(Merged(R"({"a":[{"b":1}]})", R"({"a":[{"c":null}]})"), J(R"({"a":[{"c":null}]})"));
}

TEST(MergePatchTest, NonObjectPatchReplacesTheWholeDocument) {
  EXPECT_EQ(Merged(R"({"a":1})", R"([1,2])"), J("[1,2]"));
  EXPECT_EQ(Merged(R"({"a":1})", R"("text")"), J(R"("text")"));
  EXPECT_EQ(Merged(R"({"a":1})", "null"), J("null"));
}

TEST(MergePatchTest, ObjectPatchOverNonObjectStartsFromEmpty) {
  EXPECT_EQ(Merged("[1,2]", R"({"a":1,"gone":null})"), J(R"({"a":1})"));
  EXPECT_EQ(Merged(R"({"a":"scalar"})", R"({"a":{"b":{"c":null}}})"), J(R"({"a":{"b":{}}})"));
  EXPECT_EQ(Merged("null", R"({"a":{"b":2}})"), J(R"({"a":{"b":2}})"));
}

TEST(MergePatchTest, EmptyPatchChangesNothing) {
  EXPECT_EQ(Merged(R"({"a":{"b":1}})", "{}"), J(R"({"a":{"b":1}})"));
  EXPECT_EQ(Merged(R"({"a":{"b":1}})", R"({"a":{}})"), J(R"({"a":{"b":1}})"));
}

TEST(MergePatchTest, TooDeepResultIsRefusedAndDocUnchanged) {
  Value doc = J(R"({"keep":1,"a":{"b":{}}})");
  const Value before = doc;
  // The patch adds a fourth level under a/b.
  Status s = MergePatch(doc, J(R"({"keep":2,"a":{"b":{"c":{"d":[]}}}})"), 4);
  EXPECT_EQ(s.code(), StatusCode::kTooLarge);
  EXPECT_EQ(doc, before);

  // Exactly at the limit is fine.
  EXPECT_OK(MergePatch(doc, J(R"({"a":{"b":{"c":[]}}})"), 4));
  EXPECT_EQ(doc, J(R"({"keep":1,"a":{"b":{"c":[]}}})"));
}

TEST(MergePatchTest, DeepPatchBuiltInCodeIsRefusedWithoutRecursing) {
  Value patch = 1;
  for (int i = 0; i < 100'000; ++i) {
    Value wrapper = Value::object();
    wrapper["k"] = std::move(patch);  // moves: a copy would recurse
    patch = std::move(wrapper);
  }
  Value doc = Value::object();
  EXPECT_EQ(MergePatch(doc, patch).code(), StatusCode::kTooLarge);
  EXPECT_EQ(doc, Value::object());
}

// A random object of `members` keys drawn from `names`, with nested objects,
// nulls (in patches), arrays and scalars.
Value RandomObject(std::mt19937_64& random, size_t members, size_t names, bool nulls, int depth) {
  Value out = Value::object();
  for (size_t i = 0; i < members; ++i) {
    const std::string key = "k" + std::to_string(random() % names);
    switch (random() % (depth > 0 ? 5 : 4)) {
      case 0:
        out[key] = nulls ? Value() : Value(static_cast<int64_t>(random() % 100));
        break;
      case 1:
        out[key] = static_cast<int64_t>(random() % 100);
        break;
      case 2:
        out[key] = "s" + std::to_string(random() % 100);
        break;
      case 3:
        out[key] = Value::array({1, "two", nullptr});
        break;
      default:
        out[key] = RandomObject(random, random() % 6, 8, nulls, depth - 1);
        break;
    }
  }
  return out;
}

// Small patches change members one at a time and large ones rebuild the
// object in one pass; both must give what nlohmann's merge_patch gives on its
// std::map tree.
TEST(MergePatchTest, AgreesWithNlohmannOnRandomPatchesSmallAndLarge) {
  std::mt19937_64 random(11);
  for (int round = 0; round < 300; ++round) {
    const size_t names = round % 2 == 0 ? 12 : 400;
    const size_t patch_members = round % 3 == 0 ? 2 : 1 + random() % (names / 2);
    Value doc = RandomObject(random, random() % names, names, false, 2);
    const Value patch = RandomObject(random, patch_members, names, true, 2);
    nlohmann::json oracle = nlohmann::json::parse(Dump(doc));
    oracle.merge_patch(nlohmann::json::parse(Dump(patch)));
    ASSERT_OK(MergePatch(doc, patch));
    ASSERT_EQ(Dump(doc), oracle.dump()) << "round " << round << " patch " << Dump(patch);
  }
}

}  // namespace
}  // namespace skiff::doc
