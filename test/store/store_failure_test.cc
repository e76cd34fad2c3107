// Real failures of real databases: a killed PostgreSQL connection, a value
// PostgreSQL rejects in the middle of a batch, a read-only SQLite file.
#include <fstream>
#include <iterator>

#include <pqxx/pqxx>

#include "store/store.h"
#include "support/temp_dir.h"

#include "test/store/store_test_util.h"

namespace skiff::store {
namespace {

TEST(PostgresFailureTest, LostConnectionIsAnErrorThenReconnects) {
  std::unique_ptr<support::TestStore> fixture;
  test::OpenOrSkip("postgres", &fixture);
  if (!fixture) return;
  Store& store = fixture->store();
  ASSERT_OK(store.Put("docs", "before", "1"));

  // Kill the store's backend from outside, as a restarted server would.
  ASSERT_EQ(test::KillStoreBackends(*fixture), 1);

  // The call that meets the dead connection fails cleanly...
  auto during = store.Get("docs", "before");
  if (!during.ok()) {
    EXPECT_EQ(during.status().code(), StatusCode::kUnavailable);
  }
  // ...and the store reconnects on the next one.
  auto after = store.Get("docs", "before");
  ASSERT_OK(after);
  EXPECT_EQ(*after, "1");
  EXPECT_OK(store.Put("docs", "after", "2"));
}

TEST(PostgresFailureTest, BatchFailingHalfwayAppliesNothing) {
  std::unique_ptr<support::TestStore> fixture;
  test::OpenOrSkip("postgres", &fixture);
  if (!fixture) return;
  Store& store = fixture->store();
  WriteBatch batch;
  batch.Put("docs", "good", "1");
  batch.Put("docs", "bad", "invalid UTF-8 for PostgreSQL: \xFF");
  EXPECT_STATUS(store.Write(batch), kBadRequest);
  auto good = store.Get("docs", "good");
  ASSERT_OK(good);
  EXPECT_EQ(*good, std::nullopt);
  EXPECT_OK(store.Put("docs", "good", "1"));  // the connection is still usable
}

TEST(PostgresFailureTest, SyncBatchFailingHalfwayAppliesNothing) {
  std::unique_ptr<support::TestStore> fixture;
  test::OpenOrSkip("postgres", &fixture);
  if (!fixture) return;
  Store& store = fixture->store();
  WriteBatch batch;
  batch.SetDeviceSeq({"phone", "alice", 1});
  batch.AppendChange({1, "g", "tasks", "good", "1"});
  batch.AppendChange({2, "g", "tasks", "bad", std::string("\xFF")});
  EXPECT_STATUS(store.Write(batch), kBadRequest);
  EXPECT_EQ(*store.LastSyncId(), 0u);
  EXPECT_EQ(*store.GetDevice("phone"), std::nullopt);
  auto rows = store.ScanSyncRows({"g"}, {}, 10);
  ASSERT_OK(rows);
  EXPECT_TRUE(rows->rows.empty());
}

TEST(SqliteFailureTest, FileThatIsNotADatabaseIsAnErrorAndIsLeftAlone) {
  support::TempDir dir;
  const std::string path = dir.File("garbage.db");
  const std::string garbage(8192, 'x');
  {
    std::ofstream out(path, std::ios::binary);
    out << garbage;
  }
  auto opened = OpenStore("sqlite:" + path);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("not a database"), std::string::npos)
      << opened.status().ToString();
  std::ifstream in(path, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, garbage);
}

}  // namespace
}  // namespace skiff::store
