// SqliteStore: the embedded default store. One file in WAL mode, one
// connection serialised by a mutex, every statement prepared once.
//
// A batch of one op runs as a single autocommit statement; a larger batch is
// BEGIN IMMEDIATE, one statement per op, COMMIT. Every statement stepped is
// counted, so "statements per write" is a real count.
#include <atomic>
#include <mutex>

#include <sqlite3.h>

#include "store/internal/sqlite_statement.h"
#include "store/store.h"

namespace skiff::store {
namespace {

using internal::SqliteStatement;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS skiff_meta(
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skiff_documents(
  tbl   TEXT NOT NULL,
  key   TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (tbl, key)
);
INSERT OR IGNORE INTO skiff_meta(name, value) VALUES ('schema_version', '1');
)sql";

class SqliteStore final : public Store {
 public:
  ~SqliteStore() override {
    for (auto* st : {&get_, &put_, &delete_, &scan_, &begin_, &commit_, &rollback_}) st->reset();
    sqlite3_close_v2(db_);
  }

  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             const SqliteOptions& options) {
    std::unique_ptr<SqliteStore> store(new SqliteStore());
    int rc =
        sqlite3_open_v2(path.c_str(), &store->db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      return Unavailable("cannot open SQLite file '" + path +
                         "': " + (store->db_ ? sqlite3_errmsg(store->db_) : sqlite3_errstr(rc)));
    }
    sqlite3_busy_timeout(store->db_, options.busy_timeout_ms);
    const std::string pragmas = std::string("PRAGMA journal_mode=WAL; PRAGMA synchronous=") +
                                (options.synchronous_full ? "FULL;" : "NORMAL;");
    SKIFF_RETURN_IF_ERROR(store->ExecScript(pragmas));
    SKIFF_RETURN_IF_ERROR(store->ExecScript(kSchema));
    SKIFF_RETURN_IF_ERROR(store->Prepare());
    return std::unique_ptr<Store>(std::move(store));
  }

  std::string_view kind() const override { return "sqlite"; }

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    SKIFF_RETURN_IF_ERROR(ValidateGet(table, key));
    std::lock_guard lock(mu_);
    SqliteStatement& st = *get_;
    st.BindText(1, table);
    st.BindText(2, key);
    statements_sent_.fetch_add(1, std::memory_order_relaxed);
    Result<bool> row = st.Step();
    if (!row.ok()) return st.Reset(row.status());
    std::optional<std::string> value;
    if (*row) value = std::string(st.ColumnText(0));
    SKIFF_RETURN_IF_ERROR(st.Reset(Status::Ok()));
    return value;
  }

  Status Write(const WriteBatch& batch) override {
    SKIFF_RETURN_IF_ERROR(ValidateBatch(batch));
    if (batch.empty()) return Status::Ok();
    std::lock_guard lock(mu_);
    if (batch.size() == 1) {
      SKIFF_RETURN_IF_ERROR(Apply(batch.ops().front()));
      transactions_.fetch_add(1, std::memory_order_relaxed);
      return Status::Ok();
    }
    SKIFF_RETURN_IF_ERROR(RunSimple(*begin_));
    for (const WriteBatch::Op& op : batch.ops()) {
      Status s = Apply(op);
      if (!s.ok()) {
        (void)RunSimple(*rollback_);  // the original error is what the caller needs
        return s;
      }
    }
    Status s = RunSimple(*commit_);
    if (!s.ok()) {
      (void)RunSimple(*rollback_);
      return s;
    }
    transactions_.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  }

  Result<ScanPage> Scan(std::string_view table, std::string_view after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateScan(table, after, limit));
    std::lock_guard lock(mu_);
    SqliteStatement& st = *scan_;
    st.BindText(1, table);
    st.BindText(2, after);
    st.BindInt64(3, static_cast<int64_t>(limit) + 1);  // one more tells whether a page follows
    statements_sent_.fetch_add(1, std::memory_order_relaxed);
    ScanPage page;
    for (;;) {
      Result<bool> row = st.Step();
      if (!row.ok()) return st.Reset(row.status());
      if (!*row) break;
      if (page.items.size() == limit) {
        page.next = page.items.back().key;
        break;
      }
      page.items.push_back({std::string(st.ColumnText(0)), std::string(st.ColumnText(1))});
    }
    SKIFF_RETURN_IF_ERROR(st.Reset(Status::Ok()));
    return page;
  }

  StoreCounters counters() const override {
    return {statements_sent_.load(std::memory_order_relaxed),
            transactions_.load(std::memory_order_relaxed)};
  }

 private:
  SqliteStore() = default;

  Status ExecScript(std::string_view sql) {
    uint64_t sent = 0;
    Status s = internal::ExecSqliteScript(db_, sql, &sent);
    statements_sent_.fetch_add(sent, std::memory_order_relaxed);
    return s;
  }

  Status Prepare() {
    auto make = [&](const char* sql, std::unique_ptr<SqliteStatement>* out) -> Status {
      Result<std::unique_ptr<SqliteStatement>> st = SqliteStatement::Prepare(db_, sql);
      if (!st.ok()) return st.status();
      *out = std::move(*st);
      return Status::Ok();
    };
    SKIFF_RETURN_IF_ERROR(
        make("SELECT value FROM skiff_documents WHERE tbl = ?1 AND key = ?2", &get_));
    SKIFF_RETURN_IF_ERROR(
        make("INSERT INTO skiff_documents(tbl, key, value) VALUES (?1, ?2, ?3) "
             "ON CONFLICT(tbl, key) DO UPDATE SET value = excluded.value",
             &put_));
    SKIFF_RETURN_IF_ERROR(
        make("DELETE FROM skiff_documents WHERE tbl = ?1 AND key = ?2", &delete_));
    SKIFF_RETURN_IF_ERROR(make(
        "SELECT key, value FROM skiff_documents WHERE tbl = ?1 AND key > ?2 ORDER BY key LIMIT ?3",
        &scan_));
    SKIFF_RETURN_IF_ERROR(make("BEGIN IMMEDIATE", &begin_));
    SKIFF_RETURN_IF_ERROR(make("COMMIT", &commit_));
    SKIFF_RETURN_IF_ERROR(make("ROLLBACK", &rollback_));
    return Status::Ok();
  }

  Status Apply(const WriteBatch::Op& op) {
    SqliteStatement& st = op.kind == WriteBatch::Op::Kind::kPut ? *put_ : *delete_;
    st.BindText(1, op.table);
    st.BindText(2, op.key);
    if (op.kind == WriteBatch::Op::Kind::kPut) st.BindText(3, op.value);
    return RunSimple(st);
  }

  // Steps a statement that returns no rows, then resets it.
  Status RunSimple(SqliteStatement& st) {
    statements_sent_.fetch_add(1, std::memory_order_relaxed);
    Result<bool> row = st.Step();
    return st.Reset(row.status());
  }

  sqlite3* db_ = nullptr;
  std::mutex mu_;  // serialises every use of db_ and the statements
  std::unique_ptr<SqliteStatement> get_, put_, delete_, scan_, begin_, commit_, rollback_;
  std::atomic<uint64_t> statements_sent_{0};
  std::atomic<uint64_t> transactions_{0};
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteOptions& options) {
  return SqliteStore::Open(path, options);
}

}  // namespace skiff::store
