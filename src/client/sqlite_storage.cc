#include "client/sqlite_storage.h"

#include <string_view>

#include <sqlite3.h>

namespace skiff::client {
namespace {

Status SqlError(sqlite3* db, int rc, const char* what) {
  std::string message = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_IOERR ||
      primary == SQLITE_FULL || primary == SQLITE_CANTOPEN) {
    return Unavailable(std::move(message));
  }
  return Internal(std::move(message));
}

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS rows (
  grp TEXT NOT NULL, tbl TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (grp, tbl, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox (
  seq INTEGER PRIMARY KEY, grp TEXT NOT NULL, tbl TEXT NOT NULL, key TEXT NOT NULL,
  value TEXT);
CREATE TABLE IF NOT EXISTS meta (
  id INTEGER PRIMARY KEY CHECK (id = 1), cursor INTEGER NOT NULL, bootstrapped INTEGER NOT NULL,
  after_grp TEXT, after_tbl TEXT, after_key TEXT, boot_cursor INTEGER NOT NULL,
  last_seq INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES (1, 0, 0, NULL, NULL, NULL, 0, 0);
)sql";

}  // namespace

// The connection and its prepared statements. Each Step counts one
// statement in the owner's counter.
class SqliteStorage::Db {
 public:
  Db(sqlite3* db, std::atomic<uint64_t>& counter) : db_(db), counter_(counter) {}
  ~Db() {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }

  // Frees the page cache the connection holds but does not need (what a
  // full read of the rows left behind); not a statement.
  void ReleaseCache() { sqlite3_db_release_memory(db_); }

  Status Exec(const char* sql) {
    // Counts each statement of a script, the way the store does.
    const char* tail = sql;
    while (tail != nullptr && *tail != '\0') {
      sqlite3_stmt* stmt = nullptr;
      int rc = sqlite3_prepare_v2(db_, tail, -1, &stmt, &tail);
      if (rc != SQLITE_OK) return SqlError(db_, rc, "prepare");
      if (stmt == nullptr) break;  // trailing whitespace
      rc = sqlite3_step(stmt);
      sqlite3_finalize(stmt);
      counter_.fetch_add(1, std::memory_order_relaxed);
      if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqlError(db_, rc, "exec");
    }
    return Status::Ok();
  }

  // A cached prepared statement, reset and ready for bindings.
  Result<sqlite3_stmt*> Prepare(const char* sql) {
    for (auto& [text, stmt] : cache_) {
      if (text == sql) {
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
        return stmt;
      }
    }
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqlError(db_, rc, "prepare");
    cache_.emplace_back(sql, stmt);
    return stmt;
  }

  // Steps a statement that returns no rows.
  Status Run(sqlite3_stmt* stmt) {
    counter_.fetch_add(1, std::memory_order_relaxed);
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE) return SqlError(db_, rc, "step");
    return Status::Ok();
  }

  // Starts counting a query; call Next until it returns false.
  void BeginQuery() { counter_.fetch_add(1, std::memory_order_relaxed); }
  Result<bool> Next(sqlite3_stmt* stmt) {
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) return true;
    sqlite3_reset(stmt);
    if (rc == SQLITE_DONE) return false;
    return SqlError(db_, rc, "step");
  }

  // Runs `body` between BEGIN and COMMIT; rolls back when it fails.
  template <typename Body>
  Status Transaction(Body body) {
    SKIFF_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Status s = body();
    if (s.ok()) s = Exec("COMMIT");
    if (!s.ok()) (void)Exec("ROLLBACK");
    return s;
  }

  // Sets (or, for nullopt, deletes) one row.
  Status WriteRow(const RowName& name, const std::optional<std::string>& value) {
    const char* sql = value ? "INSERT INTO rows VALUES (?1, ?2, ?3, ?4) "
                              "ON CONFLICT (grp, tbl, key) DO UPDATE SET value = excluded.value"
                            : "DELETE FROM rows WHERE grp = ?1 AND tbl = ?2 AND key = ?3";
    SKIFF_ASSIGN_OR_RETURN(auto stmt, Prepare(sql));
    Bind(stmt, 1, name.group);
    Bind(stmt, 2, name.table);
    Bind(stmt, 3, name.key);
    if (value) Bind(stmt, 4, *value);
    return Run(stmt);
  }

  static void Bind(sqlite3_stmt* stmt, int index, std::string_view text) {
    sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  }

 private:
  sqlite3* db_;
  std::atomic<uint64_t>& counter_;
  std::vector<std::pair<const char*, sqlite3_stmt*>> cache_;
};

namespace {

std::string Text(sqlite3_stmt* stmt, int column) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(stmt, column));
}

}  // namespace

Result<std::unique_ptr<SqliteStorage>> SqliteStorage::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = Unavailable("cannot open device storage '" + path + "': " + sqlite3_errstr(rc));
    sqlite3_close(raw);
    return s;
  }
  sqlite3_busy_timeout(raw, 5000);
  std::unique_ptr<SqliteStorage> storage(new SqliteStorage(nullptr));
  storage->db_ = std::make_unique<Db>(raw, storage->statements_);
  SKIFF_RETURN_IF_ERROR(storage->db_->Exec("PRAGMA journal_mode=WAL"));
  SKIFF_RETURN_IF_ERROR(storage->db_->Exec("PRAGMA synchronous=NORMAL"));
  SKIFF_RETURN_IF_ERROR(storage->db_->Exec(kSchema));
  return storage;
}

SqliteStorage::SqliteStorage(std::unique_ptr<Db> db) : db_(std::move(db)) {}
SqliteStorage::~SqliteStorage() = default;

Result<StoredState> SqliteStorage::Load() {
  StoredState state;
  Db& db = *db_;
  // Three statements, whatever the number of rows.
  SKIFF_ASSIGN_OR_RETURN(
      auto rows, db.Prepare("SELECT grp, tbl, key, value FROM rows ORDER BY grp, tbl, key"));
  db.BeginQuery();
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(bool more, db.Next(rows));
    if (!more) break;
    state.rows.push_back({{Text(rows, 0), Text(rows, 1), Text(rows, 2)}, Text(rows, 3)});
  }
  SKIFF_ASSIGN_OR_RETURN(auto outbox,
                         db.Prepare("SELECT seq, grp, tbl, key, value FROM outbox ORDER BY seq"));
  db.BeginQuery();
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(bool more, db.Next(outbox));
    if (!more) break;
    OutboxEntry e;
    e.seq = static_cast<uint64_t>(sqlite3_column_int64(outbox, 0));
    e.name = {Text(outbox, 1), Text(outbox, 2), Text(outbox, 3)};
    if (sqlite3_column_type(outbox, 4) != SQLITE_NULL) e.value = Text(outbox, 4);
    state.outbox.push_back(std::move(e));
  }
  SKIFF_ASSIGN_OR_RETURN(
      auto meta,
      db.Prepare(
          "SELECT cursor, bootstrapped, after_grp, after_tbl, after_key, boot_cursor, last_seq "
          "FROM meta WHERE id = 1"));
  db.BeginQuery();
  SKIFF_ASSIGN_OR_RETURN(bool found, db.Next(meta));
  if (!found) return Internal("device storage has no meta row");
  state.position.cursor = static_cast<uint64_t>(sqlite3_column_int64(meta, 0));
  state.position.bootstrapped = sqlite3_column_int64(meta, 1) != 0;
  if (sqlite3_column_type(meta, 2) != SQLITE_NULL) {
    state.position.bootstrap_after = RowName{Text(meta, 2), Text(meta, 3), Text(meta, 4)};
  }
  state.position.bootstrap_cursor = static_cast<uint64_t>(sqlite3_column_int64(meta, 5));
  state.last_seq = static_cast<uint64_t>(sqlite3_column_int64(meta, 6));
  Result<bool> extra = db.Next(meta);  // finishes the statement
  if (!extra.ok()) return extra.status();
  // The device serves the rows from memory from now on: the pages the scan
  // cached would only double them.
  db.ReleaseCache();
  return state;
}

Status SqliteStorage::WriteLocal(const OutboxEntry& entry) {
  Db& db = *db_;
  return db.Transaction([&]() -> Status {
    SKIFF_RETURN_IF_ERROR(db.WriteRow(entry.name, entry.value));
    SKIFF_ASSIGN_OR_RETURN(auto insert,
                           db.Prepare("INSERT INTO outbox VALUES (?1, ?2, ?3, ?4, ?5)"));
    sqlite3_bind_int64(insert, 1, static_cast<int64_t>(entry.seq));
    Db::Bind(insert, 2, entry.name.group);
    Db::Bind(insert, 3, entry.name.table);
    Db::Bind(insert, 4, entry.name.key);
    if (entry.value) {
      Db::Bind(insert, 5, *entry.value);
    } else {
      sqlite3_bind_null(insert, 5);
    }
    SKIFF_RETURN_IF_ERROR(db.Run(insert));
    // The highest seq is kept apart from the outbox: once the outbox is
    // empty, a reopened device must still never reuse a seq.
    SKIFF_ASSIGN_OR_RETURN(auto seq,
                           db.Prepare("UPDATE meta SET last_seq = max(last_seq, ?1) WHERE id = 1"));
    sqlite3_bind_int64(seq, 1, static_cast<int64_t>(entry.seq));
    return db.Run(seq);
  });
}

Status SqliteStorage::ApplyRemote(const std::vector<RowWrite>& rows, const SyncPosition& position) {
  Db& db = *db_;
  return db.Transaction([&]() -> Status {
    for (const RowWrite& w : rows) SKIFF_RETURN_IF_ERROR(db.WriteRow(w.name, w.value));
    SKIFF_ASSIGN_OR_RETURN(
        auto meta,
        db.Prepare(
            "UPDATE meta SET cursor = ?1, bootstrapped = ?2, after_grp = ?3, after_tbl = ?4, "
            "after_key = ?5, boot_cursor = ?6 WHERE id = 1"));
    sqlite3_bind_int64(meta, 1, static_cast<int64_t>(position.cursor));
    sqlite3_bind_int64(meta, 2, position.bootstrapped ? 1 : 0);
    if (position.bootstrap_after) {
      Db::Bind(meta, 3, position.bootstrap_after->group);
      Db::Bind(meta, 4, position.bootstrap_after->table);
      Db::Bind(meta, 5, position.bootstrap_after->key);
    }
    sqlite3_bind_int64(meta, 6, static_cast<int64_t>(position.bootstrap_cursor));
    return db.Run(meta);
  });
}

Status SqliteStorage::Acknowledge(uint64_t last_seq) {
  SKIFF_ASSIGN_OR_RETURN(auto stmt, db_->Prepare("DELETE FROM outbox WHERE seq <= ?1"));
  sqlite3_bind_int64(stmt, 1, static_cast<int64_t>(last_seq));
  return db_->Run(stmt);
}

}  // namespace skiff::client
