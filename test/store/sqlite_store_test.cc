// What the SQLite store promises beyond the conformance suite: the WAL stays
// bounded while checkpoints run beside the writer, closing leaves no WAL
// behind, and a killed process loses no acknowledged write.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "support/temp_dir.h"

#include "test/status_matchers.h"

namespace skiff::store {
namespace {

uintmax_t SizeOf(const std::string& path) {
  std::error_code ec;
  uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

// A batch of `rows` documents of about 1 KiB, keys unique to `batch`.
WriteBatch MakeBatch(int batch, int rows) {
  WriteBatch b;
  for (int j = 0; j < rows; ++j) {
    b.Put("docs", "k" + std::to_string(batch) + "-" + std::to_string(j),
          "{\"body\":\"" + std::string(1000, 'a' + (batch + j) % 26) + "\"}");
  }
  return b;
}

TEST(SqliteStoreTest, WalStaysBoundedUnderSustainedWrites) {
  support::TempDir dir;
  const std::string path = dir.File("s.db");
  auto store = OpenSqliteStore(path);
  ASSERT_OK(store);
  // About 80 MB of WAL frames in all, written back to back: a checkpoint
  // beside the writer never catches up, so only the writer's own
  // checkpoint at the size limit lets the WAL start over.
  uintmax_t largest = 0;
  for (int i = 0; i < 3000; ++i) {
    ASSERT_OK((*store)->Write(MakeBatch(i, 20)));
    largest = std::max(largest, SizeOf(path + "-wal"));
  }
  // 4000 pages of 4 KiB before the writer checkpoints, plus one commit:
  // a bound of the design, whatever the machine's load.
  EXPECT_LT(largest, uintmax_t{17} << 20);
  auto value = (*store)->Get("docs", "k0-0");
  ASSERT_OK(value);
  EXPECT_TRUE(value->has_value());
}

TEST(SqliteStoreTest, CheckpointsReachTheDatabaseFileAndCloseRemovesTheWal) {
  support::TempDir dir;
  const std::string path = dir.File("s.db");
  {
    auto store = OpenSqliteStore(path);
    ASSERT_OK(store);
    const uintmax_t empty = SizeOf(path);
    // Past the background checkpoint size (1000 pages), below the size at
    // which the writer checkpoints itself: only the background round can
    // copy pages into the database file.
    for (int i = 0; i < 300; ++i) ASSERT_OK((*store)->Write(MakeBatch(i, 20)));
    ASSERT_GT(SizeOf(path + "-wal"), uintmax_t{1000} * 4096);
    for (int waited_ms = 0; SizeOf(path) == empty && waited_ms < 10'000; waited_ms += 10) {
      usleep(10'000);
    }
    EXPECT_GT(SizeOf(path), empty);
  }
  // The checkpoint thread stopped first, so the writer's connection was
  // the last one and checkpointed and removed the WAL as it closed.
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  auto reopened = OpenSqliteStore(path);
  ASSERT_OK(reopened);
  auto value = (*reopened)->Get("docs", "k299-19");
  ASSERT_OK(value);
  EXPECT_TRUE(value->has_value());
}

// synchronous=NORMAL in WAL mode: a commit is in the OS once Write returns,
// so killing the process (not the machine) loses nothing acknowledged, with
// checkpoints running on their own thread at any moment.
TEST(SqliteStoreTest, KilledProcessLosesNoAcknowledgedWrite) {
  support::TempDir dir;
  const std::string path = dir.File("s.db");
  int acks[2];
  ASSERT_EQ(pipe(acks), 0);
  constexpr int kRows = 5;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // writes until killed, acknowledging each batch
    close(acks[0]);
    auto store = OpenSqliteStore(path);
    if (!store.ok()) _exit(1);
    for (int i = 0;; ++i) {
      if (!(*store)->Write(MakeBatch(i, kRows)).ok()) _exit(2);
      if (write(acks[1], &i, sizeof i) != sizeof i) _exit(3);
    }
  }
  close(acks[1]);
  // Enough batches for both kinds of checkpoint to have run, then a kill
  // at whatever point the writer has reached.
  int acked = -1;
  int next = 0;
  while (acked < 3000 && read(acks[0], &next, sizeof next) == sizeof next) acked = next;
  kill(child, SIGKILL);
  while (read(acks[0], &next, sizeof next) == sizeof next) acked = next;
  close(acks[0]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "the writer stopped by itself: " << wstatus;
  ASSERT_GE(acked, 3000);

  auto store = OpenSqliteStore(path);
  ASSERT_OK(store);
  int missing = 0;
  for (int i = 0; i <= acked; ++i) {
    for (int j = 0; j < kRows; ++j) {
      auto value = (*store)->Get("docs", "k" + std::to_string(i) + "-" + std::to_string(j));
      ASSERT_OK(value);
      if (!value->has_value()) ++missing;
    }
  }
  EXPECT_EQ(missing, 0) << "of " << (acked + 1) * kRows << " acknowledged rows";
}

}  // namespace
}  // namespace skiff::store
