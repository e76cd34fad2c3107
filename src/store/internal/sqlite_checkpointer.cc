#include "store/internal/sqlite_checkpointer.h"

#include "sqlite/statement.h"

namespace skiff::store::internal {

Result<std::unique_ptr<SqliteCheckpointer>> SqliteCheckpointer::Start(const std::string& path,
                                                                      bool synchronous_full,
                                                                      uint64_t* statements) {
  std::unique_ptr<SqliteCheckpointer> c(new SqliteCheckpointer());
  int rc =
      sqlite3_open_v2(path.c_str(), &c->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = Unavailable("cannot open SQLite file '" + path + "' for checkpoints: " +
                           (c->db_ ? sqlite3_errmsg(c->db_) : sqlite3_errstr(rc)));
    sqlite3_close_v2(c->db_);
    c->db_ = nullptr;
    return s;
  }
  // The level decides whether a checkpoint syncs; it must be the writer's.
  Status s = sqlite::ExecScript(
      c->db_, synchronous_full ? "PRAGMA synchronous=FULL;" : "PRAGMA synchronous=NORMAL;",
      statements);
  if (!s.ok()) return s;  // the destructor closes db_
  c->thread_ = std::thread([p = c.get()] { p->Run(); });
  return c;
}

SqliteCheckpointer::~SqliteCheckpointer() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.Signal();
  if (thread_.joinable()) thread_.join();
  sqlite3_close_v2(db_);
}

void SqliteCheckpointer::Request() {
  MutexLock lock(&mu_);
  if (requested_) return;
  requested_ = true;
  cv_.Signal();
}

void SqliteCheckpointer::RunExclusive(const std::function<void()>& checkpoint) {
  MutexLock run(&run_mu_);
  checkpoint();
}

void SqliteCheckpointer::Run() {
  MutexLock lock(&mu_);
  for (;;) {
    while (!requested_ && !stopping_) cv_.Wait(mu_);
    if (stopping_) return;
    requested_ = false;
    lock.Unlock();
    // Errors are left for the next round: SQLITE_BUSY means another
    // checkpoint is running, and the writer's own checkpoint (the store's
    // backstop) reports nothing either, as SQLite's auto-checkpoint does not.
    {
      MutexLock run(&run_mu_);
      (void)sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    }
    lock.Lock();
  }
}

}  // namespace skiff::store::internal
