#include "store/internal/coalesce.h"

#include <gtest/gtest.h>

namespace skiff::store::internal {
namespace {

TEST(CoalesceTest, LastOpOnAKeyWinsAndKeysComeOutSorted) {
  WriteBatch batch;
  batch.Put("t", "b", "1");
  batch.Put("t", "a", "1");
  batch.Delete("t", "b");
  batch.Put("t", "a", "2");
  batch.Delete("u", "a");
  batch.Put("u", "a", "3");
  CoalescedBatch net = Coalesce(batch);
  ASSERT_EQ(net.puts.size(), 2u);
  EXPECT_EQ(net.puts[0]->table, "t");
  EXPECT_EQ(net.puts[0]->value, "2");
  EXPECT_EQ(net.puts[1]->table, "u");
  EXPECT_EQ(net.puts[1]->value, "3");
  ASSERT_EQ(net.deletes.size(), 1u);
  EXPECT_EQ(net.deletes[0]->key, "b");
  // The ops replaced by a later one of their key, in the batch's order.
  const WriteBatch::Op* first = batch.ops().data();
  ASSERT_EQ(net.folded.size(), 3u);
  EXPECT_EQ(net.folded[0], first + 0);  // t/b put, then deleted
  EXPECT_EQ(net.folded[1], first + 1);  // t/a = 1, then 2
  EXPECT_EQ(net.folded[2], first + 4);  // u/a deleted, then put
}

TEST(CoalesceTest, EmptyBatchGivesNothing) {
  CoalescedBatch net = Coalesce(WriteBatch());
  EXPECT_TRUE(net.puts.empty());
  EXPECT_TRUE(net.deletes.empty());
  EXPECT_TRUE(net.folded.empty());
}

}  // namespace
}  // namespace skiff::store::internal
