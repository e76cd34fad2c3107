#include "store/internal/pg_array.h"

#include <gtest/gtest.h>

namespace skiff::store::internal {
namespace {

TEST(PgArrayTest, QuotesEveryElementAndEscapesQuotesAndBackslashes) {
  WriteBatch batch;
  batch.Put("t", "plain", R"({"a":"x\"y"})");
  batch.Put("t", "{,} NULL", "back\\slash");
  std::vector<const WriteBatch::Op*> ops = {&batch.ops()[0], &batch.ops()[1]};
  EXPECT_EQ(PgTextArray(ops, OpField::kKey), R"({"plain","{,} NULL"})");
  EXPECT_EQ(PgTextArray(ops, OpField::kValue), R"({"{\"a\":\"x\\\"y\"}","back\\slash"})");
  EXPECT_EQ(PgTextArray(ops, OpField::kTable), R"({"t","t"})");
}

TEST(PgArrayTest, EmptyListIsEmptyArray) { EXPECT_EQ(PgTextArray({}, OpField::kKey), "{}"); }

}  // namespace
}  // namespace skiff::store::internal
