// The device's compact row table: it behaves like the ordered map of
// (group, table, key) to JSON text it replaces (checked against one over a
// long random sequence of puts and erases), gives back every value byte for
// byte, and keeps a row well under the bytes a map spends.
#include "client/internal/row_table.h"

#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace skiff::client::internal {
namespace {

TEST(MemberNamesTest, CompactsNamesAndExpandsByteForByte) {
  MemberNames names;
  const std::string doc = R"({"id":1,"title":"a \"quoted\" \\ title:","tags":["x","y"],)"
                          R"("n":{"id":2,"e\u0041":3,"":4},"s":"k:v"})";
  std::string compact;
  names.Compact(doc, &compact);
  EXPECT_LT(compact.size(), doc.size());
  std::string back;
  names.Expand(compact, &back);
  EXPECT_EQ(back, doc);
  // Names seen once are numbered once: a second document reuses them.
  const size_t numbered = names.size();
  std::string again;
  names.Compact(R"({"id":5,"title":"t"})", &again);
  EXPECT_EQ(names.size(), numbered);
}

// Each name is first tried against the one that followed the previous name
// last time; a different order or a new name must still get its own number.
TEST(MemberNamesTest, NamesInAnotherOrderKeepTheirOwnNumbers) {
  MemberNames names;
  for (const char* doc :
       {R"({"a":1,"b":2,"c":{"d":3}})", R"({"a":1,"c":{"d":3},"b":2})", R"({"b":2,"a":1})",
        R"({"a":1,"e":5,"b":2})", R"({"d":{"a":{"b":1}}})", R"({"a":1,"b":2,"c":{"d":3}})"}) {
    std::string compact, back;
    names.Compact(doc, &compact);
    names.Expand(compact, &back);
    EXPECT_EQ(back, doc);
  }
  EXPECT_EQ(names.size(), 5u);
  std::string first, again;
  names.Compact(R"({"c":{"d":3},"a":1})", &first);
  names.Compact(R"({"c":{"d":3},"a":1})", &again);
  EXPECT_EQ(first, again);
}

TEST(MemberNamesTest, KeepsTextThatIsNotJsonWhole) {
  MemberNames names;
  for (std::string text : {std::string("\x01\x02 odd"), std::string("\x02"), std::string("\"open"),
                           std::string(" {\"a\" : 1} "), std::string("")}) {
    std::string compact, back;
    names.Compact(text, &compact);
    names.Expand(compact, &back);
    EXPECT_EQ(back, text);
  }
}

TEST(MemberNamesTest, StopsNumberingAtTheLimit) {
  MemberNames names;
  std::string all;
  for (size_t i = 0; i < MemberNames::kMaxNames + 10; ++i) {
    const std::string doc = "{\"name" + std::to_string(i) + "\":" + std::to_string(i) + "}";
    std::string compact, back;
    names.Compact(doc, &compact);
    names.Expand(compact, &back);
    ASSERT_EQ(back, doc);
  }
  EXPECT_EQ(names.size(), MemberNames::kMaxNames);
}

TEST(RowTableTest, MatchesAnOrderedMapOverRandomWrites) {
  RowTable table;
  std::map<RowName, std::string> model;
  std::mt19937 rng(7);
  const char* groups[] = {"a", "b", "team"};
  const char* tables[] = {"t", "tasks"};
  for (int step = 0; step < 20000; ++step) {
    RowName name{groups[rng() % 3], tables[rng() % 2], "k" + std::to_string(rng() % 500)};
    if (rng() % 4 == 0) {
      table.Erase(name);
      model.erase(name);
    } else {
      const std::string value =
          R"({"v":)" + std::to_string(step) + R"(,"pad":")" + std::string(rng() % 300, 'x') + "\"}";
      table.Put(name, value);
      model[name] = value;
    }
  }
  ASSERT_EQ(table.size(), model.size());
  for (const auto& [name, value] : model) ASSERT_EQ(table.Get(name), value) << name.key;
  EXPECT_FALSE(table.Get({"a", "t", "absent"}).has_value());
  EXPECT_FALSE(table.Get({"nogroup", "t", "k1"}).has_value());
  for (const char* g : groups) {
    for (const char* t : tables) {
      std::vector<StoredRow> rows = table.Scan(g, t);
      auto it = model.lower_bound(RowName{g, t, ""});
      for (const StoredRow& row : rows) {
        ASSERT_NE(it, model.end());
        EXPECT_EQ(row.name, it->first);
        EXPECT_EQ(row.value, it->second);
        ++it;
      }
      EXPECT_TRUE(it == model.end() || it->first.group != g || it->first.table != t);
    }
  }
}

// Rows larger than an arena block (64 KiB) get one of their own; rows
// around them, replaced until the arena is rewritten, keep their values.
TEST(RowTableTest, KeepsRowsLargerThanABlockAndAcrossRewrites) {
  RowTable table;
  std::map<std::string, std::string> model;
  const auto value = [](size_t i, size_t round, size_t size) {
    std::string v =
        R"({"i":)" + std::to_string(i) + R"(,"round":)" + std::to_string(round) + R"(,"pad":")";
    v.append(size, static_cast<char>('a' + (i + round) % 26));
    return v + "\"}";
  };
  for (size_t round = 0; round < 6; ++round) {
    for (size_t i = 0; i < 40; ++i) {
      // Every seventh row is over a block (one over three blocks), the others small.
      const size_t size = i % 7 == 3 ? (i == 10 ? 200000 : 70000) : 300 + i;
      const std::string key = "k" + std::to_string(100 + i);
      model[key] = value(i, round, size);
      table.Put({"g", "t", key}, model[key]);
    }
  }
  ASSERT_EQ(table.size(), model.size());
  for (const auto& [key, v] : model) EXPECT_EQ(table.Get({"g", "t", key}), v) << key;
  // Five rounds of replaced rows were dropped: the arena was rewritten, so
  // it holds about one round, not six.
  size_t live = 0;
  for (const auto& [key, v] : model) live += key.size() + v.size();
  EXPECT_LT(table.bytes(), 3 * live);
}

// The arena's first block grows with its rows: a device of a few rows does
// not hold a whole block (64 KiB) for them.
TEST(RowTableTest, AFewRowsHoldLittle) {
  RowTable table;
  for (int i = 0; i < 3; ++i) {
    table.Put({"g", "t", "k" + std::to_string(i)}, R"({"id":)" + std::to_string(i) + "}");
  }
  EXPECT_LT(table.bytes(), 4096u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(table.Get({"g", "t", "k" + std::to_string(i)}),
              R"({"id":)" + std::to_string(i) + "}");
  }
}

TEST(RowTableTest, RowsInOrderCostLittleMoreThanTheirBytes) {
  RowTable table;
  size_t text_bytes = 0;
  constexpr size_t kRows = 10000;
  table.Reserve(kRows);
  for (size_t i = 0; i < kRows; ++i) {
    const std::string key = "r" + std::to_string(100000 + i);
    const std::string value = R"({"done":false,"id":)" + std::to_string(i) +
                              R"(,"owner":"user-1","priority":3,"title":")" +
                              std::string(120, 'a' + i % 26) + "\"}";
    text_bytes += key.size() + value.size();
    table.Put({"team", "tasks", key}, value);
  }
  table.ShrinkToFit();
  ASSERT_EQ(table.size(), kRows);
  EXPECT_EQ(table.Scan("team", "tasks").size(), kRows);
  // Entries are 16 bytes; the arena holds keys and compact values, whose
  // member names take 2 bytes instead of 7 to 11.
  EXPECT_LT(table.bytes(), text_bytes);
  EXPECT_EQ(table.Get({"team", "tasks", "r100042"}),
            R"({"done":false,"id":42,"owner":"user-1","priority":3,"title":")" +
                std::string(120, 'a' + 42 % 26) + "\"}");
}

}  // namespace
}  // namespace skiff::client::internal
