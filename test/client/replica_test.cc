// The device's replica on memory storage, with no server and no threads:
// local writes land in the rows and the outbox together and survive a
// reload, the server's rows apply under pending writes, acknowledging drops
// entries and unpins their rows, and seqs never repeat.
#include "client/internal/replica.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/memory_storage.h"

#include "test/status_matchers.h"

namespace skiff::client::internal {
namespace {

const RowName kA{"team", "tasks", "a"};
const RowName kB{"team", "tasks", "b"};

TEST(ReplicaTest, ALocalWriteIsARowAndAnOutboxEntryThatSurviveAReload) {
  MemoryStorage storage;
  {
    Replica replica(storage);
    ASSERT_OK(replica.Load());
    ASSERT_OK(replica.Write(kA, R"({"n":1})"));
    ASSERT_OK(replica.Write(kB, R"({"n":2})"));
    ASSERT_OK(replica.Write(kA, std::nullopt));
    EXPECT_EQ(replica.Get(kA), std::nullopt);
    EXPECT_EQ(replica.Get(kB), R"({"n":2})");
    EXPECT_EQ(replica.row_count(), 1u);
    EXPECT_EQ(replica.outbox_size(), 3u);
  }
  Replica reloaded(storage);
  ASSERT_OK(reloaded.Load());
  EXPECT_EQ(reloaded.Get(kB), R"({"n":2})");
  std::vector<StoredRow> rows = reloaded.Scan("team", "tasks");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, kB);
  const std::vector<OutboxEntry> outbox = reloaded.Outbox(10);
  ASSERT_EQ(outbox.size(), 3u);
  EXPECT_EQ(outbox[0].seq, 1u);
  EXPECT_EQ(outbox[2].seq, 3u);
  EXPECT_EQ(outbox[2].name, kA);
  EXPECT_FALSE(outbox[2].value.has_value());
  EXPECT_EQ(reloaded.Outbox(2).size(), 2u);  // the oldest first
  EXPECT_EQ(reloaded.Outbox(2)[1].seq, 2u);
}

TEST(ReplicaTest, AnInvalidNameChangesNothing) {
  MemoryStorage storage;
  Replica replica(storage);
  ASSERT_OK(replica.Load());
  EXPECT_STATUS(replica.Write({"", "tasks", "a"}, "1"), kBadRequest);
  EXPECT_EQ(replica.row_count(), 0u);
  EXPECT_EQ(replica.outbox_size(), 0u);
}

TEST(ReplicaTest, ServerRowsApplyUnderPendingWritesUntilAcknowledged) {
  MemoryStorage storage;
  Replica replica(storage);
  ASSERT_OK(replica.Load());
  ASSERT_OK(replica.Write(kA, R"("mine")"));
  SyncPosition position;
  position.cursor = 7;
  ASSERT_OK(replica.ApplyRemote({{kA, R"("theirs")"}, {kB, R"("new")"}}, position));
  EXPECT_EQ(replica.Get(kA), R"("mine")") << "a pending write was overridden";
  EXPECT_EQ(replica.Get(kB), R"("new")");
  EXPECT_EQ(replica.position().cursor, 7u);

  auto dropped = replica.Acknowledge(1);
  ASSERT_OK(dropped);
  EXPECT_EQ(*dropped, 1u);
  EXPECT_EQ(replica.outbox_size(), 0u);
  position.cursor = 8;
  ASSERT_OK(replica.ApplyRemote({{kA, R"("theirs")"}, {kB, std::nullopt}}, position));
  EXPECT_EQ(replica.Get(kA), R"("theirs")");
  EXPECT_EQ(replica.Get(kB), std::nullopt);

  Replica reloaded(storage);
  ASSERT_OK(reloaded.Load());
  EXPECT_EQ(reloaded.position().cursor, 8u);
  EXPECT_EQ(reloaded.Get(kA), R"("theirs")");
  EXPECT_EQ(reloaded.outbox_size(), 0u);
}

TEST(ReplicaTest, TwoWritesToOneRowPinItUntilBothAreAcknowledged) {
  MemoryStorage storage;
  Replica replica(storage);
  ASSERT_OK(replica.Load());
  ASSERT_OK(replica.Write(kA, "1"));
  ASSERT_OK(replica.Write(kA, "2"));
  ASSERT_OK(replica.Acknowledge(1));
  ASSERT_OK(replica.ApplyRemote({{kA, "9"}}, {}));
  EXPECT_EQ(replica.Get(kA), "2");
  ASSERT_OK(replica.Acknowledge(2));
  ASSERT_OK(replica.ApplyRemote({{kA, "9"}}, {}));
  EXPECT_EQ(replica.Get(kA), "9");
}

TEST(ReplicaTest, SeqsNeverRepeatAfterTheOutboxEmpties) {
  MemoryStorage storage;
  {
    Replica replica(storage);
    ASSERT_OK(replica.Load());
    ASSERT_OK(replica.Write(kA, "1"));
    ASSERT_OK(replica.Write(kA, "2"));
    ASSERT_OK(replica.Acknowledge(2));
  }
  Replica reloaded(storage);
  ASSERT_OK(reloaded.Load());
  ASSERT_OK(reloaded.Write(kB, "3"));
  const std::vector<OutboxEntry> outbox = reloaded.Outbox(10);
  ASSERT_EQ(outbox.size(), 1u);
  EXPECT_EQ(outbox[0].seq, 3u);
}

}  // namespace
}  // namespace skiff::client::internal
