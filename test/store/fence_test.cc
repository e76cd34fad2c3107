// Cluster mode's fencing at the store: a batch carrying fences commits only
// if every partition it names is still owned at the epoch given, checked in
// the statement that writes it; otherwise nothing of it is applied. The partition
// table is the one the cluster instances keep (src/store/postgres_leases.cc),
// created here by hand.
#include <string>

#include <pqxx/pqxx>

#include "store/store.h"

#include "test/store/store_test_util.h"

namespace skiff::store {
namespace {

class FenceTest : public testing::Test {
 protected:
  void SetUp() override {
    test::OpenOrSkip("postgres", &fixture_);
    if (!fixture_) return;
    pqxx::connection conn(fixture_->url());
    pqxx::work tx(conn);
    tx.exec(
        "CREATE TABLE skiff_partitions(partition int PRIMARY KEY, owner bigint, epoch bigint "
        "NOT NULL DEFAULT 0, lease_until timestamptz)");
    // Partition 7 is owned by instance 2 at epoch 5; 8 by instance 3 at 1.
    tx.exec("INSERT INTO skiff_partitions VALUES (7, 2, 5, now()), (8, 3, 1, now())");
    tx.commit();
  }
  std::unique_ptr<support::TestStore> fixture_;
};

TEST_F(FenceTest, OwnerAtItsEpochCommits) {
  if (!fixture_) return;
  WriteBatch b;
  b.Put("notes", "a", "1");
  b.AddFence({7, 2, 5});
  EXPECT_OK(fixture_->store().Write(b));
  auto v = fixture_->store().Get("notes", "a");
  ASSERT_OK(v);
  EXPECT_EQ(*v, "1");
}

TEST_F(FenceTest, TakenOverOwnerCommitsNothing) {
  if (!fixture_) return;
  // The old owner (1 at epoch 4) of partition 7 writes two keys, one of
  // them in a partition it still holds: nothing of the batch lands.
  WriteBatch b;
  b.Put("notes", "a", "stale");
  b.Put("notes", "b", "stale");
  b.AddFence({7, 1, 4});
  b.AddFence({8, 3, 1});
  Status s = fixture_->store().Write(b);
  EXPECT_STATUS(s, kUnavailable);
  EXPECT_NE(s.message().find("no longer owns"), std::string::npos) << s.message();
  for (const char* key : {"a", "b"}) {
    auto v = fixture_->store().Get("notes", key);
    ASSERT_OK(v);
    EXPECT_FALSE(v->has_value()) << key;
  }
  // The same owner id at a newer epoch than the table's is refused too.
  WriteBatch newer;
  newer.Put("notes", "a", "x");
  newer.AddFence({7, 2, 6});
  EXPECT_STATUS(fixture_->store().Write(newer), kUnavailable);
}

// Every part of the batch's one statement is fenced: a delete, a sync change
// with its synced row, a device's sequence, and the commit mark (a lost
// connection's check must find the write not applied).
TEST_F(FenceTest, AFencedOutBatchWritesNoPartNorItsCommitMark) {
  if (!fixture_) return;
  ASSERT_OK(fixture_->store().Put("notes", "kept", "1"));
  auto marks = [&] {
    pqxx::connection conn(fixture_->url());
    pqxx::nontransaction tx(conn);
    std::string all;
    for (const auto& row : tx.exec("SELECT instance, seq FROM skiff_commit_marks ORDER BY 1")) {
      all += row[0].c_str() + std::string("=") + row[1].c_str() + ";";
    }
    return all;
  };
  const std::string before = marks();
  ASSERT_FALSE(before.empty());  // the Put above wrote this store's mark
  WriteBatch b;
  b.Delete("notes", "kept");
  b.Put("notes", "new", "1");
  b.AppendChange({1, "team", "tasks", "t", "1"});
  b.SetDeviceSeq({"phone", "ann", 1});
  b.AddFence({7, 1, 4});
  EXPECT_STATUS(fixture_->store().Write(b), kUnavailable);
  EXPECT_EQ(*fixture_->store().Get("notes", "kept"), "1");
  EXPECT_EQ(*fixture_->store().Get("notes", "new"), std::nullopt);
  EXPECT_EQ(*fixture_->store().LastSyncId(), 0u);
  auto rows = fixture_->store().ScanSyncRows({"team"}, {}, 10);
  ASSERT_OK(rows);
  EXPECT_TRUE(rows->rows.empty());
  EXPECT_EQ(*fixture_->store().GetDevice("phone"), std::nullopt);
  EXPECT_EQ(marks(), before);
}

TEST_F(FenceTest, TwoEpochsOfOnePartitionCannotBothHold) {
  if (!fixture_) return;
  WriteBatch b;
  b.Put("notes", "a", "1");
  b.AddFence({7, 2, 5});
  b.AddFence({7, 2, 4});
  EXPECT_STATUS(fixture_->store().Write(b), kUnavailable);
}

// The watch log (cluster watches, docs/cluster.md): the fenced statement
// numbers every op of a watched table, in the batch's order, the ones the
// batch folded into a later op of their key too.
TEST_F(FenceTest, FencedBatchLogsEveryChangeOfWatchedTablesInItsOrder) {
  if (!fixture_) return;
  Store& store = fixture_->store();
  auto at = store.WatchTable("scores");
  ASSERT_OK(at);
  const uint64_t v = *at;
  WriteBatch b;
  b.Put("scores", "a", "1");
  b.Put("notes", "x", "1");  // not watched: not logged
  b.Put("scores", "a", "2");
  b.Delete("scores", "b");
  b.Put("scores", "c", "3");
  b.AddFence({7, 2, 5});
  ASSERT_OK(store.Write(b));
  auto log = store.ReadWatchLog(0, 100);
  ASSERT_OK(log);
  const std::vector<WatchLogEntry> expected = {
      {v, "scores", std::nullopt, std::nullopt},  // watched from here
      {v + 1, "scores", "a", "1"},
      {v + 2, "scores", "a", "2"},
      {v + 3, "scores", "b", std::nullopt},
      {v + 4, "scores", "c", "3"},
  };
  EXPECT_EQ(*log, expected);
  auto head = store.ReadWatchLogHead();
  ASSERT_OK(head);
  EXPECT_EQ(head->version, v + 4);
  EXPECT_EQ(head->tables, std::vector<std::string>{"scores"});
  // Read from a version on, and trimmed.
  auto after = store.ReadWatchLog(v + 2, 1);
  ASSERT_OK(after);
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ(after->front().version, v + 3);
  ASSERT_OK(store.TrimWatchLog(v + 2));
  auto rest = store.ReadWatchLog(0, 100);
  ASSERT_OK(rest);
  ASSERT_EQ(rest->size(), 2u);
  EXPECT_EQ(rest->front().version, v + 3);
}

TEST_F(FenceTest, AFencedOutBatchLogsNothingAndATableIsMarkedOnce) {
  if (!fixture_) return;
  Store& store = fixture_->store();
  auto at = store.WatchTable("scores");
  ASSERT_OK(at);
  auto again = store.WatchTable("scores");
  ASSERT_OK(again);
  EXPECT_EQ(*again, *at);  // already watched: no new mark
  WriteBatch b;
  b.Put("scores", "a", "1");
  b.AddFence({7, 1, 4});  // not the owner
  EXPECT_STATUS(store.Write(b), kUnavailable);
  auto log = store.ReadWatchLog(0, 100);
  ASSERT_OK(log);
  ASSERT_EQ(log->size(), 1u);
  EXPECT_FALSE(log->front().key.has_value());
  auto head = store.ReadWatchLogHead();
  ASSERT_OK(head);
  EXPECT_EQ(head->version, *at);
  // Another table is marked at the next version.
  auto other = store.WatchTable("notes");
  ASSERT_OK(other);
  EXPECT_EQ(*other, *at + 1);
}

// Every fenced batch checks its writes against the list of watched tables,
// so the list is bounded; a table already in it can still be watched.
TEST_F(FenceTest, TheWatchedTablesAreBounded) {
  if (!fixture_) return;
  Store& store = fixture_->store();
  for (size_t i = 0; i < kMaxWatchedTables; ++i)
    ASSERT_OK(store.WatchTable("t" + std::to_string(i)));
  Status refused = store.WatchTable("one_more").status();
  EXPECT_STATUS(refused, kUnavailable);
  EXPECT_NE(refused.message().find("most tables"), std::string::npos) << refused.message();
  EXPECT_OK(store.WatchTable("t0"));
  auto head = store.ReadWatchLogHead();
  ASSERT_OK(head);
  EXPECT_EQ(head->tables.size(), kMaxWatchedTables);
}

}  // namespace
}  // namespace skiff::store
