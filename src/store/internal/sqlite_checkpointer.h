// SqliteCheckpointer: WAL checkpoints of one SQLite file, run on a thread of
// their own instead of inside the writer's COMMIT.
//
// SQLite's auto-checkpoint runs in the COMMIT that takes the WAL past 1000
// pages: that call copies the pages into the database file and fsyncs both
// files (synchronous=NORMAL syncs at checkpoints, not at commits), and the
// writer, with every write queued behind it, waits milliseconds per fsync. A
// PASSIVE checkpoint on a second connection does the same work beside the
// writer: it never blocks the writer or a reader, and it syncs exactly as
// the writer's would (same synchronous level), so nothing about durability
// changes.
//
// Thread-safe: Request() may be called from any thread.
#ifndef SKIFF_STORE_INTERNAL_SQLITE_CHECKPOINTER_H_
#define SKIFF_STORE_INTERNAL_SQLITE_CHECKPOINTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <sqlite3.h>

#include "base/mutex.h"
#include "base/status.h"

namespace skiff::store::internal {

class SqliteCheckpointer {
 public:
  // Opens a second connection to `path` (a file already in WAL mode) with
  // the given synchronous level and starts the thread; adds the statements
  // that took to *statements. unavailable when the file cannot be opened.
  static Result<std::unique_ptr<SqliteCheckpointer>> Start(const std::string& path,
                                                           bool synchronous_full,
                                                           uint64_t* statements);
  // Waits for a running checkpoint to finish, then closes the connection.
  ~SqliteCheckpointer();
  SqliteCheckpointer(const SqliteCheckpointer&) = delete;
  SqliteCheckpointer& operator=(const SqliteCheckpointer&) = delete;

  // Asks for one PASSIVE checkpoint and returns at once. Requests made
  // before the thread takes the last one merge into one.
  void Request();

  // Runs `checkpoint` (the writer's own) once no background round is under
  // way, and keeps the next from starting until it returns. SQLite refuses
  // a checkpoint while another holds the checkpoint lock, without waiting,
  // so without this a writer's checkpoint at the size limit could find a
  // background round running and let the WAL grow on.
  void RunExclusive(const std::function<void()>& checkpoint);

 private:
  SqliteCheckpointer() = default;
  void Run();

  sqlite3* db_ = nullptr;  // used by the thread only, once started
  Mutex run_mu_;           // held for every checkpoint, background or the writer's
  Mutex mu_;
  CondVar cv_;
  bool requested_ SKIFF_GUARDED_BY(mu_) = false;
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_SQLITE_CHECKPOINTER_H_
