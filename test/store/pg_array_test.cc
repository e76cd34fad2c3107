#include "store/internal/pg_array.h"

#include <gtest/gtest.h>

namespace skiff::store::internal {
namespace {

TEST(PgArrayTest, QuotesEveryElementAndEscapesQuotesAndBackslashes) {
  EXPECT_EQ(PgArray({R"({"a":"x\"y"})", "back\\slash", "{,} NULL"}),
            R"({"{\"a\":\"x\\\"y\"}","back\\slash","{,} NULL"})");
}

TEST(PgArrayTest, NulloptIsSqlNull) {
  EXPECT_EQ(PgArray({"a", std::nullopt, ""}), R"({"a",NULL,""})");
}

TEST(PgArrayTest, EmptyListIsEmptyArray) { EXPECT_EQ(PgArray({}), "{}"); }

TEST(PgArrayTest, BuildsFromRows) {
  struct Row {
    std::string name;
  };
  std::vector<Row> rows = {{"x"}, {"y"}};
  EXPECT_EQ(PgArrayOf(rows, [](const Row& r) { return std::string_view(r.name); }), R"({"x","y"})");
}

}  // namespace
}  // namespace skiff::store::internal
