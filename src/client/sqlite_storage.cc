#include "client/sqlite_storage.h"

#include <string_view>
#include <utility>

#include <sqlite3.h>

#include "sqlite/statement.h"

namespace skiff::client {
namespace {

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

// The connection and its prepared statements. Each statement stepped counts
// one in the owner's counter.
class SqliteStorage::Db {
 public:
  Db(sqlite3* db, std::atomic<uint64_t>& counter) : db_(db), counter_(counter) {}
  ~Db() {
    cache_.clear();  // statements before their connection
    sqlite3_close(db_);
  }

  // Frees the page cache the connection holds but does not need (what a
  // full read of the rows left behind); not a statement.
  void ReleaseCache() { sqlite3_db_release_memory(db_); }

  // Counts each statement of a script, the way the store does.
  Status Exec(std::string_view sql) {
    uint64_t sent = 0;
    Status s = sqlite::ExecScript(db_, sql, &sent);
    counter_.fetch_add(sent, std::memory_order_relaxed);
    return s;
  }

  // A cached prepared statement, reset and ready for bindings.
  Result<sqlite::Statement*> Prepare(const char* sql) {
    for (auto& [text, stmt] : cache_) {
      if (text == sql) {
        (void)stmt->Reset();
        return stmt.get();
      }
    }
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Statement> stmt,
                           sqlite::Statement::Prepare(db_, sql));
    cache_.emplace_back(sql, std::move(stmt));
    return cache_.back().second.get();
  }

  // Steps a statement that returns no rows.
  Status Run(sqlite::Statement* stmt) {
    counter_.fetch_add(1, std::memory_order_relaxed);
    Result<bool> row = stmt->Step();
    if (row.ok() && *row) return stmt->Reset(Internal("SQLite: a write returned a row"));
    return stmt->Reset(row.status());
  }

  // Starts counting a query; call Next until it returns false.
  void BeginQuery() { counter_.fetch_add(1, std::memory_order_relaxed); }
  Result<bool> Next(sqlite::Statement* stmt) {
    Result<bool> row = stmt->Step();
    if (row.ok() && *row) return true;
    SKIFF_RETURN_IF_ERROR(stmt->Reset(row.status()));
    return false;
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
    SKIFF_ASSIGN_OR_RETURN(sqlite::Statement * stmt, Prepare(sql));
    stmt->BindText(1, name.group);
    stmt->BindText(2, name.table);
    stmt->BindText(3, name.key);
    if (value) stmt->BindText(4, *value);
    return Run(stmt);
  }

 private:
  sqlite3* db_;
  std::atomic<uint64_t>& counter_;
  // By the address of the SQL text: every statement is a literal.
  std::vector<std::pair<const char*, std::unique_ptr<sqlite::Statement>>> cache_;
};

namespace {

std::string Text(const sqlite::Statement& stmt, int column) {
  return std::string(stmt.ColumnText(column));
}

uint64_t Unsigned(const sqlite::Statement& stmt, int column) {
  return static_cast<uint64_t>(stmt.ColumnInt64(column));
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
    state.rows.push_back({{Text(*rows, 0), Text(*rows, 1), Text(*rows, 2)}, Text(*rows, 3)});
  }
  SKIFF_ASSIGN_OR_RETURN(auto outbox,
                         db.Prepare("SELECT seq, grp, tbl, key, value FROM outbox ORDER BY seq"));
  db.BeginQuery();
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(bool more, db.Next(outbox));
    if (!more) break;
    OutboxEntry e;
    e.seq = Unsigned(*outbox, 0);
    e.name = {Text(*outbox, 1), Text(*outbox, 2), Text(*outbox, 3)};
    if (!outbox->ColumnIsNull(4)) e.value = Text(*outbox, 4);
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
  state.position.cursor = Unsigned(*meta, 0);
  state.position.bootstrapped = meta->ColumnInt64(1) != 0;
  if (!meta->ColumnIsNull(2)) {
    state.position.bootstrap_after = RowName{Text(*meta, 2), Text(*meta, 3), Text(*meta, 4)};
  }
  state.position.bootstrap_cursor = Unsigned(*meta, 5);
  state.last_seq = Unsigned(*meta, 6);
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
    insert->BindInt64(1, static_cast<int64_t>(entry.seq));
    insert->BindText(2, entry.name.group);
    insert->BindText(3, entry.name.table);
    insert->BindText(4, entry.name.key);
    if (entry.value) {
      insert->BindText(5, *entry.value);
    } else {
      insert->BindNull(5);
    }
    SKIFF_RETURN_IF_ERROR(db.Run(insert));
    // The highest seq is kept apart from the outbox: once the outbox is
    // empty, a reopened device must still never reuse a seq.
    SKIFF_ASSIGN_OR_RETURN(auto seq,
                           db.Prepare("UPDATE meta SET last_seq = max(last_seq, ?1) WHERE id = 1"));
    seq->BindInt64(1, static_cast<int64_t>(entry.seq));
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
    meta->BindInt64(1, static_cast<int64_t>(position.cursor));
    meta->BindInt64(2, position.bootstrapped ? 1 : 0);
    if (position.bootstrap_after) {
      meta->BindText(3, position.bootstrap_after->group);
      meta->BindText(4, position.bootstrap_after->table);
      meta->BindText(5, position.bootstrap_after->key);
    }
    meta->BindInt64(6, static_cast<int64_t>(position.bootstrap_cursor));
    return db.Run(meta);
  });
}

Status SqliteStorage::Acknowledge(uint64_t last_seq) {
  SKIFF_ASSIGN_OR_RETURN(auto stmt, db_->Prepare("DELETE FROM outbox WHERE seq <= ?1"));
  stmt->BindInt64(1, static_cast<int64_t>(last_seq));
  return db_->Run(stmt);
}

}  // namespace skiff::client
