#include "doc/flat_object.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "doc/document.h"

namespace skiff::doc {
namespace {

using Object = FlatObject<std::string, int>;

std::vector<std::pair<std::string, int>> Members(const Object& o) { return {o.begin(), o.end()}; }
std::vector<std::pair<std::string, int>> Members(const std::map<std::string, int>& m) {
  return {m.begin(), m.end()};
}

TEST(FlatObjectTest, KeepsKeysInOrderWhateverTheInsertOrder) {
  Object o;
  o.emplace("m", 1);
  o.emplace("a", 2);
  o.emplace("z", 3);
  o.emplace("b", 4);
  EXPECT_EQ(Members(o),
            (std::vector<std::pair<std::string, int>>{{"a", 2}, {"b", 4}, {"m", 1}, {"z", 3}}));
}

TEST(FlatObjectTest, EmplaceLeavesAnExistingValueAlone) {
  Object o;
  EXPECT_TRUE(o.emplace("k", 1).second);
  const auto [at, fresh] = o.emplace("k", 2);
  EXPECT_FALSE(fresh);
  EXPECT_EQ(at->second, 1);
  o["k"] = 5;
  EXPECT_EQ(o.at("k"), 5);
  EXPECT_EQ(o.size(), 1u);
}

TEST(FlatObjectTest, FindsCountsAndErasesByAnyStringType) {
  Object o{{"b", 2}, {"a", 1}, {"c", 3}};
  EXPECT_EQ(o.find(std::string_view("b"))->second, 2);
  EXPECT_EQ(o.count("c"), 1u);
  EXPECT_EQ(o.count("d"), 0u);
  EXPECT_EQ(o.find("aa"), o.end());
  EXPECT_EQ(o.erase(std::string_view("a")), 1u);
  EXPECT_EQ(o.erase("a"), 0u);
  EXPECT_EQ(o.erase(o.begin())->first, "c");
  EXPECT_EQ(Members(o), (std::vector<std::pair<std::string, int>>{{"c", 3}}));
  EXPECT_THROW(o.at("b"), std::out_of_range);
}

TEST(FlatObjectTest, FromMembersSortsAndKeepsTheLastOfARepeatedKey) {
  Object o = Object::FromMembers({{"b", 1}, {"a", 2}, {"b", 3}, {"c", 4}, {"a", 5}, {"b", 6}});
  EXPECT_EQ(Members(o), (std::vector<std::pair<std::string, int>>{{"a", 5}, {"b", 6}, {"c", 4}}));
  Object sorted = Object::FromMembers({{"a", 1}, {"b", 2}});
  EXPECT_EQ(Members(sorted), (std::vector<std::pair<std::string, int>>{{"a", 1}, {"b", 2}}));
}

TEST(FlatObjectTest, FromMembersDropsTheRoomOfRepeatedKeys) {
  Object::Members repeats(1000, {"a", 0});
  repeats.back().second = 7;
  Object o = Object::FromMembers(std::move(repeats));
  EXPECT_EQ(Members(o), (std::vector<std::pair<std::string, int>>{{"a", 7}}));
  EXPECT_EQ(o.capacity(), 1u);
}

// As std::map's range insert: present keys keep their values, and of a key
// repeated in the range the first stays; a range in any order is sorted once.
TEST(FlatObjectTest, RangeInsertKeepsWhatIsThereAndTheFirstOfARepeat) {
  const std::vector<std::pair<std::string, int>> range = {{"d", 1}, {"b", 2}, {"d", 3},
                                                          {"a", 4}, {"c", 5}, {"b", 6}};
  Object o{{"c", 9}};
  o.insert(range.begin(), range.end());
  std::map<std::string, int> oracle{{"c", 9}};
  oracle.insert(range.begin(), range.end());
  EXPECT_EQ(Members(o), Members(oracle));

  std::vector<std::pair<std::string, int>> descending;
  for (int i = 100'000; i > 0; --i) descending.emplace_back("k" + std::to_string(i), i);
  const Object built(descending.begin(), descending.end());
  const std::map<std::string, int> built_oracle(descending.begin(), descending.end());
  EXPECT_EQ(Members(built), Members(built_oracle));
}

// Random inserts, assignments and erases give the same members, in the same
// order, as std::map does.
TEST(FlatObjectTest, AgreesWithStdMapOnRandomOperations) {
  std::mt19937_64 random(7);
  Object o;
  std::map<std::string, int> oracle;
  for (int step = 0; step < 20'000; ++step) {
    const std::string key = "k" + std::to_string(random() % 300);
    const int value = static_cast<int>(random() % 1000);
    switch (random() % 4) {
      case 0:
        EXPECT_EQ(o.emplace(key, value).second, oracle.emplace(key, value).second);
        break;
      case 1:
        o[key] = value;
        oracle[key] = value;
        break;
      case 2:
        EXPECT_EQ(o.erase(key), oracle.erase(key));
        break;
      default:
        EXPECT_EQ(o.count(key), oracle.count(key));
        break;
    }
  }
  EXPECT_EQ(Members(o), Members(oracle));
}

TEST(FlatObjectTest, ComparesLikeAMap) {
  const Object a{{"a", 1}, {"b", 2}};
  const Object b{{"b", 2}, {"a", 1}};
  const Object c{{"a", 1}, {"b", 3}};
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_LT(a, c);
}

// The document tree uses it: members come out in key order and lookups by
// name work through nlohmann's interface.
TEST(FlatObjectTest, BacksTheDocumentTree) {
  Value v;
  v["zeta"] = 1;
  v["alpha"] = {{"y", true}, {"x", nullptr}};
  v.emplace("mid", "text");
  EXPECT_EQ(Dump(v), R"({"alpha":{"x":null,"y":true},"mid":"text","zeta":1})");
  EXPECT_TRUE(v.contains("mid"));
  EXPECT_EQ(v.value("zeta", 0), 1);
  EXPECT_EQ(v.erase("mid"), 1u);
  EXPECT_FALSE(v.contains("mid"));
  EXPECT_EQ(v.at("alpha").size(), 2u);
  EXPECT_EQ(v, Value::parse(R"({"zeta":1,"alpha":{"x":null,"y":true}})"));
}

}  // namespace
}  // namespace skiff::doc
