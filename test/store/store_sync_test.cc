// The sync engine's part of every store: the change log, the synced rows and
// the devices' sequence numbers, the same on memory, SQLite and PostgreSQL.
#include <string>
#include <vector>

#include "store/store.h"

#include "test/store/store_test_util.h"

namespace skiff::store {
namespace {

Change MakeChange(uint64_t id, std::string group, std::string key,
                  std::optional<std::string> value) {
  return Change{id, std::move(group), "tasks", std::move(key), std::move(value)};
}

class StoreSyncTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { test::OpenOrSkip(GetParam(), &fixture_); }
  Store& store() { return fixture_->store(); }

  // Writes `changes` in one batch.
  void Push(std::vector<Change> changes) {
    WriteBatch batch;
    for (auto& c : changes) batch.AppendChange(std::move(c));
    ASSERT_OK(store().Write(batch));
  }

  std::vector<uint64_t> Ids(const std::vector<Change>& changes) {
    std::vector<uint64_t> ids;
    for (const auto& c : changes) ids.push_back(c.sync_id);
    return ids;
  }

  std::unique_ptr<support::TestStore> fixture_;
};

TEST_P(StoreSyncTest, LastSyncIdFollowsTheLog) {
  auto empty = store().LastSyncId();
  ASSERT_OK(empty);
  EXPECT_EQ(*empty, 0u);
  Push({MakeChange(1, "g1", "a", "1"), MakeChange(2, "g1", "b", "2")});
  Push({MakeChange(7, "g2", "c", "3")});
  auto last = store().LastSyncId();
  ASSERT_OK(last);
  EXPECT_EQ(*last, 7u);
  auto by_group = store().LastSyncIdByGroup();
  ASSERT_OK(by_group);
  EXPECT_EQ(*by_group, (std::map<std::string, uint64_t>{{"g1", 2}, {"g2", 7}}));
}

TEST_P(StoreSyncTest, ChangesComeBackInSyncIdOrderForVisibleGroupsOnly) {
  Push({MakeChange(1, "g1", "a", "1"), MakeChange(2, "g2", "b", "2")});
  Push({MakeChange(3, "g1", "a", std::nullopt), MakeChange(4, "g3", "c", "3")});
  auto g1 = store().ReadChanges(0, {"g1"}, 100);
  ASSERT_OK(g1);
  ASSERT_EQ(Ids(*g1), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ((*g1)[0], MakeChange(1, "g1", "a", "1"));
  EXPECT_EQ((*g1)[1].value, std::nullopt);  // a delete

  auto both = store().ReadChanges(1, {"g1", "g2", "g3"}, 100);
  ASSERT_OK(both);
  EXPECT_EQ(Ids(*both), (std::vector<uint64_t>{2, 3, 4}));
  auto limited = store().ReadChanges(0, {"g1", "g2", "g3"}, 2);
  ASSERT_OK(limited);
  EXPECT_EQ(Ids(*limited), (std::vector<uint64_t>{1, 2}));
  auto none = store().ReadChanges(0, {}, 100);
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
  EXPECT_STATUS(store().ReadChanges(0, {"bad group"}, 10), kBadRequest);
}

TEST_P(StoreSyncTest, SyncedRowsHoldTheLatestValueAndPageByGroup) {
  std::vector<Change> changes;
  uint64_t id = 0;
  for (int i = 0; i < 25; ++i) {
    char key[8];
    snprintf(key, sizeof key, "k%02d", i);
    changes.push_back(MakeChange(++id, i % 2 == 0 ? "even" : "odd", key, "\"v1\""));
  }
  changes.push_back(MakeChange(++id, "even", "k00", "\"v2\""));      // rewritten
  changes.push_back(MakeChange(++id, "even", "k02", std::nullopt));  // deleted
  Push(changes);

  std::vector<SyncRow> seen;
  SyncRowCursor cursor;
  for (int pages = 0; pages < 100; ++pages) {
    auto page = store().ScanSyncRows({"even"}, cursor, 4);
    ASSERT_OK(page);
    EXPECT_LE(page->rows.size(), 4u);
    seen.insert(seen.end(), page->rows.begin(), page->rows.end());
    if (!page->next) break;
    cursor = *page->next;
  }
  ASSERT_EQ(seen.size(), 12u);  // 13 even rows, one deleted
  EXPECT_EQ(seen[0], (SyncRow{"even", "tasks", "k00", "\"v2\"", 26}));
  EXPECT_EQ(seen[1].key, "k04");
  for (const auto& row : seen) EXPECT_EQ(row.group, "even");
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i - 1].key, seen[i].key);

  auto odd = store().ScanSyncRows({"odd"}, {}, 100);
  ASSERT_OK(odd);
  EXPECT_EQ(odd->rows.size(), 12u);
  EXPECT_EQ(odd->next, std::nullopt);
}

// Pages of several groups in (group, table, key) order: a cursor in the
// middle of one group goes on with the rest of it, then the caller's later
// groups; a group the caller lacks (between two of its groups, or named in
// the cursor) is never read, and a group named twice is read once.
TEST_P(StoreSyncTest, PagesCrossGroupsAndTablesInOrder) {
  std::vector<Change> changes;
  uint64_t id = 0;
  for (const char* group : {"a", "b", "c"}) {
    for (const char* table : {"t1", "t2"}) {
      for (const char* key : {"k1", "k2", "k3"}) {
        Change c = MakeChange(++id, group, key, "1");
        c.table = table;
        changes.push_back(c);
      }
    }
  }
  Push(changes);
  for (size_t limit : {1u, 2u, 4u, 5u, 100u}) {
    std::vector<std::string> seen;
    SyncRowCursor cursor;
    for (int pages = 0; pages < 100; ++pages) {
      auto page = store().ScanSyncRows({"c", "a", "c"}, cursor, limit);
      ASSERT_OK(page);
      ASSERT_LE(page->rows.size(), limit);
      for (const SyncRow& row : page->rows) seen.push_back(row.group + row.table + row.key);
      if (!page->next) break;
      cursor = *page->next;
    }
    const std::vector<std::string> expected = {"at1k1", "at1k2", "at1k3", "at2k1",
                                               "at2k2", "at2k3", "ct1k1", "ct1k2",
                                               "ct1k3", "ct2k1", "ct2k2", "ct2k3"};
    EXPECT_EQ(seen, expected) << "limit " << limit;
  }
  // A cursor in a group the caller lacks goes on with its later groups.
  auto after_b = store().ScanSyncRows({"a", "c"}, SyncRowCursor{"b", "t1", "k2"}, 100);
  ASSERT_OK(after_b);
  ASSERT_EQ(after_b->rows.size(), 6u);
  EXPECT_EQ(after_b->rows.front().group, "c");
}

// Each store folds a batch its own way (PostgreSQL derives the rows from the
// log rows it inserts, SQLite keeps them by a trigger): whatever the order
// of a batch, each row ends as its last change, beside document writes.
TEST_P(StoreSyncTest, TheLastChangeToARowInABatchWins) {
  Push({MakeChange(1, "g", "was", "\"old\""), MakeChange(2, "g", "gone", "\"old\"")});
  ASSERT_OK(store().Put("docs", "d1", "1"));
  WriteBatch batch;
  batch.AppendChange(MakeChange(3, "g", "was", std::nullopt));
  batch.AppendChange(MakeChange(4, "g", "was", "\"back\""));  // deleted, then set again
  batch.AppendChange(MakeChange(5, "g", "gone", "\"new\""));
  batch.AppendChange(MakeChange(6, "g", "gone", std::nullopt));  // set, then deleted
  batch.AppendChange(MakeChange(7, "g", "fresh", "1"));
  batch.AppendChange(MakeChange(8, "g", "fresh", "2"));
  batch.Delete("docs", "d1");
  batch.Put("docs", "d2", "2");
  batch.SetDeviceSeq({"phone", "ann", 9});
  ASSERT_OK(store().Write(batch));

  auto rows = store().ScanSyncRows({"g"}, {}, 10);
  ASSERT_OK(rows);
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_EQ(rows->rows[0], (SyncRow{"g", "tasks", "fresh", "2", 8}));
  EXPECT_EQ(rows->rows[1], (SyncRow{"g", "tasks", "was", "\"back\"", 4}));
  auto log = store().ReadChanges(2, {"g"}, 10);
  ASSERT_OK(log);
  EXPECT_EQ(Ids(*log), (std::vector<uint64_t>{3, 4, 5, 6, 7, 8}));  // every change is logged
  EXPECT_EQ(*store().Get("docs", "d1"), std::nullopt);
  EXPECT_EQ(*store().Get("docs", "d2"), "2");
  EXPECT_EQ(*store().GetDevice("phone"), (DeviceSeq{"phone", "ann", 9}));
}

TEST_P(StoreSyncTest, SameTableAndKeyInTwoGroupsAreTwoRows) {
  Push({MakeChange(1, "team", "plan", "\"ours\"")});
  Push({MakeChange(2, "eves", "plan", "\"theirs\"")});
  Push({MakeChange(3, "eves", "plan", std::nullopt)});
  auto team = store().ScanSyncRows({"team"}, {}, 10);
  ASSERT_OK(team);
  ASSERT_EQ(team->rows.size(), 1u);
  EXPECT_EQ(team->rows[0].value, "\"ours\"");
  auto eves = store().ScanSyncRows({"eves"}, {}, 10);
  ASSERT_OK(eves);
  EXPECT_TRUE(eves->rows.empty());
}

TEST_P(StoreSyncTest, ASyncIdIsNeverLoggedTwice) {
  Push({MakeChange(1, "g", "a", "1")});
  WriteBatch again;
  again.Put("docs", "k", "1");
  again.AppendChange(MakeChange(1, "g", "b", "2"));
  EXPECT_FALSE(store().Write(again).ok());
  EXPECT_EQ(*store().Get("docs", "k"), std::nullopt);  // nothing of the batch landed
  auto log = store().ReadChanges(0, {"g"}, 10);
  ASSERT_OK(log);
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ((*log)[0].key, "a");
}

TEST_P(StoreSyncTest, DevicesKeepTheirLastSequence) {
  auto unknown = store().GetDevice("phone-1");
  ASSERT_OK(unknown);
  EXPECT_EQ(*unknown, std::nullopt);
  WriteBatch batch;
  batch.SetDeviceSeq({"phone-1", "alice", 3});
  batch.SetDeviceSeq({"phone-1", "alice", 5});  // the latest in a batch wins
  batch.SetDeviceSeq({"laptop", "bob", 1});
  ASSERT_OK(store().Write(batch));
  auto phone = store().GetDevice("phone-1");
  ASSERT_OK(phone);
  EXPECT_EQ(*phone, (DeviceSeq{"phone-1", "alice", 5}));
  auto laptop = store().GetDevice("laptop");
  ASSERT_OK(laptop);
  EXPECT_EQ(laptop->value().last_seq, 1u);
  EXPECT_STATUS(store().GetDevice(std::string(300, 'd')), kTooLarge);
}

TEST_P(StoreSyncTest, DevicesSetBesideChangesKeepTheLatestOfEach) {
  // More device numbers than changes, one device twice: SQLite carries the
  // first two on the changes' statements and sets the third alone; the
  // latest number of each device must win either way.
  WriteBatch batch;
  batch.AppendChange(MakeChange(1, "g", "a", "1"));
  batch.AppendChange(MakeChange(2, "g", "b", "2"));
  batch.SetDeviceSeq({"phone", "alice", 3});
  batch.SetDeviceSeq({"laptop", "bob", 1});
  batch.SetDeviceSeq({"phone", "alice", 5});
  ASSERT_OK(store().Write(batch));
  EXPECT_EQ(*store().GetDevice("phone"), (DeviceSeq{"phone", "alice", 5}));
  EXPECT_EQ(*store().GetDevice("laptop"), (DeviceSeq{"laptop", "bob", 1}));
  // More changes than device numbers: the changes without one set none.
  WriteBatch more;
  more.AppendChange(MakeChange(3, "g", "c", "3"));
  more.AppendChange(MakeChange(4, "g", "a", std::nullopt));
  more.SetDeviceSeq({"laptop", "bob", 2});
  ASSERT_OK(store().Write(more));
  EXPECT_EQ(*store().GetDevice("laptop"), (DeviceSeq{"laptop", "bob", 2}));
  EXPECT_EQ(*store().GetDevice("phone"), (DeviceSeq{"phone", "alice", 5}));
  auto log = store().ReadChanges(0, {"g"}, 10);
  ASSERT_OK(log);
  EXPECT_EQ(Ids(*log), (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST_P(StoreSyncTest, APushWhoseChangeIsRefusedSetsNoDevice) {
  // A push of one row is one statement on SQLite and PostgreSQL: when its
  // log insert fails (a sync id logged already), the device is not set.
  Push({MakeChange(1, "g", "a", "1")});
  WriteBatch retry;
  retry.AppendChange(MakeChange(1, "g", "b", "2"));
  retry.SetDeviceSeq({"phone", "alice", 9});
  EXPECT_FALSE(store().Write(retry).ok());
  EXPECT_EQ(*store().GetDevice("phone"), std::nullopt);
  auto rows = store().ScanSyncRows({"g"}, SyncRowCursor{}, 10);
  ASSERT_OK(rows);
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_EQ(rows->rows[0].key, "a");
}

TEST_P(StoreSyncTest, DocumentsChangesAndDevicesCommitTogether) {
  WriteBatch batch;
  batch.Put("docs", "k", "1");
  batch.AppendChange(MakeChange(1, "g", "a", "1"));
  batch.SetDeviceSeq({"d", "u", 1});
  batch.Put("bad table!", "k", "1");  // invalid: nothing of the batch may land
  EXPECT_STATUS(store().Write(batch), kBadRequest);
  EXPECT_EQ(*store().LastSyncId(), 0u);
  EXPECT_EQ(*store().GetDevice("d"), std::nullopt);
  EXPECT_EQ(*store().Get("docs", "k"), std::nullopt);
}

TEST_P(StoreSyncTest, APushOfOneRowCostsAFixedNumberOfStatements) {
  const StoreCounters before = store().counters();
  WriteBatch batch;
  batch.AppendChange(MakeChange(1, "g", "a", "1"));
  batch.SetDeviceSeq({"d", "u", 1});
  ASSERT_OK(store().Write(batch));
  const uint64_t sent = store().counters().statements - before.statements;
  // SQLite: one autocommit insert into the view skiff_push (its triggers log
  // the change, set the row and the device). PostgreSQL: one statement for
  // the log, the row and the device.
  const uint64_t expected = GetParam() == "memory" ? 0 : 1;
  EXPECT_EQ(sent, expected);
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreSyncTest, testing::Values("memory", "sqlite", "postgres"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace skiff::store
