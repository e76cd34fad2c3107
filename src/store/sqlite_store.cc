// SqliteStore: the embedded default store. One file in WAL mode, one
// connection serialised by a mutex, every statement prepared once.
//
// A batch that needs one statement runs it autocommit; a larger batch is
// BEGIN IMMEDIATE, one statement per op, COMMIT. Every statement stepped is
// counted, so "statements per write" is a real count. (Multi-row
// INSERT ... ON CONFLICT statements were measured and are slower with
// SQLite 3.40: 36-row batches of small documents, ~215 k rows/s one row per
// statement, ~190 k with 8 rows, ~137 k with all 36 in one.) A sync change is
// one statement: an insert into the view skiff_push, whose triggers log it,
// set or delete the synced row and, when the change carries one, set a
// device's sequence number; a push of one row is one autocommit statement.
//
// WAL checkpoints run on a second connection (SqliteCheckpointer), not in
// the COMMIT that crosses SQLite's auto-checkpoint size, so a commit does
// not wait for a checkpoint's fsyncs.
//
// One server per file: an exclusive open holds PATH.lock (LockFile).
// locking_mode=EXCLUSIVE would also keep a second server out, but it keeps
// every other connection out too: the checkpointer's and the admin CLI's.
//
// A failed COMMIT is never of unknown outcome here, so no commit mark is
// written (PostgresStore writes one): SQLite runs in this process, and a
// COMMIT that returns an error has not made the transaction durable (the
// transaction is then rolled back, or SQLite already did), while a crash
// that would leave the outcome open takes the caller with it.
#include <algorithm>
#include <atomic>

#include <sqlite3.h>

#include "base/mutex.h"
#include "sqlite/statement.h"
#include "store/internal/lock_file.h"
#include "store/internal/sqlite_checkpointer.h"
#include "store/store.h"

namespace skiff::store {
namespace {

using internal::SqliteCheckpointer;
using sqlite::Statement;

// WAL size, in pages, at which a commit asks the checkpointer for a round:
// SQLite's own auto-checkpoint size (about 4 MB of 4 KiB pages).
constexpr int kBackgroundCheckpointPages = 1000;
// WAL size at which the writer checkpoints itself, inside its commit, as
// auto-checkpoint would. A PASSIVE checkpoint beside a busy writer never
// catches up with it, and SQLite only starts the WAL over from its
// beginning once everything in it was copied, so under sustained writes the
// WAL would grow without bound. The writer's own checkpoint waits for a
// background round under way (SqliteCheckpointer::RunExclusive), then
// copies what is left; with no other reader or writer on the file it copies
// everything, so the next commit starts the WAL over. The file is bounded by
// this size plus one commit, whatever the timing.
constexpr int kBlockingCheckpointPages = 4 * kBackgroundCheckpointPages;

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
CREATE TABLE IF NOT EXISTS skiff_changes(
  sync_id INTEGER PRIMARY KEY,
  grp     TEXT NOT NULL,
  tbl     TEXT NOT NULL,
  key     TEXT NOT NULL,
  value   TEXT
);
CREATE INDEX IF NOT EXISTS skiff_changes_by_group ON skiff_changes(grp, sync_id);
CREATE TABLE IF NOT EXISTS skiff_sync_rows(
  grp     TEXT NOT NULL,
  tbl     TEXT NOT NULL,
  key     TEXT NOT NULL,
  value   TEXT NOT NULL,
  sync_id INTEGER NOT NULL,
  PRIMARY KEY (grp, tbl, key)
);
-- The synced rows follow the log: each change inserted sets or deletes its
-- row inside the same statement, so a push sends one statement per change
-- for both, and no writer can update one without the other.
CREATE TRIGGER IF NOT EXISTS skiff_sync_rows_put AFTER INSERT ON skiff_changes
WHEN NEW.value IS NOT NULL BEGIN
  INSERT INTO skiff_sync_rows(grp, tbl, key, value, sync_id)
  VALUES (NEW.grp, NEW.tbl, NEW.key, NEW.value, NEW.sync_id)
  ON CONFLICT(grp, tbl, key) DO UPDATE SET value = excluded.value, sync_id = excluded.sync_id;
END;
CREATE TRIGGER IF NOT EXISTS skiff_sync_rows_delete AFTER INSERT ON skiff_changes
WHEN NEW.value IS NULL BEGIN
  DELETE FROM skiff_sync_rows WHERE grp = NEW.grp AND tbl = NEW.tbl AND key = NEW.key;
END;
CREATE TABLE IF NOT EXISTS skiff_devices(
  device   TEXT PRIMARY KEY,
  usr      TEXT NOT NULL,
  last_seq INTEGER NOT NULL
);
-- What a push writes, as one row: a change and, when `device` is not NULL,
-- a device's last applied sequence number. Inserting into the view runs
-- both inserts in one statement (so a push of one row by one device is one
-- autocommit statement), and the log insert's triggers above set the row.
CREATE VIEW IF NOT EXISTS skiff_push AS
  SELECT sync_id, grp, tbl, key, value, NULL AS device, NULL AS usr, NULL AS last_seq
  FROM skiff_changes WHERE 0;
CREATE TRIGGER IF NOT EXISTS skiff_push_insert INSTEAD OF INSERT ON skiff_push BEGIN
  INSERT INTO skiff_changes(sync_id, grp, tbl, key, value)
  VALUES (NEW.sync_id, NEW.grp, NEW.tbl, NEW.key, NEW.value);
  INSERT INTO skiff_devices(device, usr, last_seq)
  SELECT NEW.device, NEW.usr, NEW.last_seq WHERE NEW.device IS NOT NULL
  ON CONFLICT(device) DO UPDATE SET usr = excluded.usr, last_seq = excluded.last_seq;
END;
INSERT OR IGNORE INTO skiff_meta(name, value) VALUES ('schema_version', '1');
)sql";

class SqliteStore final : public Store {
 public:
  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             const SqliteOptions& options) {
    std::unique_ptr<SqliteStore> store(new SqliteStore());
    // Before the file is touched: a second server must not even create
    // the schema in a file another one serves.
    if (options.exclusive) {
      Result<std::unique_ptr<internal::LockFile>> lock =
          internal::LockFile::Acquire(path + ".lock");
      if (!lock.ok()) {
        return Unavailable("SQLite file '" + path + "' is in use by another server (" +
                           lock.status().message() +
                           "); run one skiffd per database, or stop the other first");
      }
      store->lock_ = std::move(*lock);
    }
    int rc =
        sqlite3_open_v2(path.c_str(), &store->db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      return Unavailable("cannot open SQLite file '" + path +
                         "': " + (store->db_ ? sqlite3_errmsg(store->db_) : sqlite3_errstr(rc)));
    }
    sqlite3_busy_timeout(store->db_, options.busy_timeout_ms);
    SKIFF_RETURN_IF_ERROR(store->EnableWal());
    SKIFF_RETURN_IF_ERROR(store->ExecScript(std::string("PRAGMA synchronous=") +
                                            (options.synchronous_full ? "FULL;" : "NORMAL;")));
    SKIFF_RETURN_IF_ERROR(store->ExecScript(kSchema));
    SKIFF_RETURN_IF_ERROR(store->Prepare());
    uint64_t sent = 0;
    Result<std::unique_ptr<SqliteCheckpointer>> checkpointer =
        SqliteCheckpointer::Start(path, options.synchronous_full, &sent);
    store->statements_sent_.fetch_add(sent, std::memory_order_relaxed);
    if (!checkpointer.ok()) return checkpointer.status();
    store->checkpointer_ = std::move(*checkpointer);
    // Replaces (and so turns off) SQLite's auto-checkpoint on this connection.
    sqlite3_wal_hook(store->db_, &SqliteStore::OnWalCommit, store.get());
    return std::unique_ptr<Store>(std::move(store));
  }

  std::string_view kind() const override { return "sqlite"; }

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    SKIFF_RETURN_IF_ERROR(ValidateGet(table, key));
    MutexLock lock(&mu_);
    Statement& st = *get_;
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
    MutexLock lock(&mu_);
    if (StatementsFor(batch) == 1) {  // one statement, autocommit
      SKIFF_RETURN_IF_ERROR(ApplyAll(batch));
      transactions_.fetch_add(1, std::memory_order_relaxed);
      return Status::Ok();
    }
    SKIFF_RETURN_IF_ERROR(RunSimple(*begin_));
    Status s = ApplyAll(batch);
    if (s.ok()) s = RunSimple(*commit_);
    if (!s.ok()) {
      (void)RunSimple(*rollback_);  // the original error is what the caller needs
      return s;
    }
    transactions_.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  }

  Result<ScanPage> Scan(std::string_view table, std::string_view after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateScan(table, after, limit));
    MutexLock lock(&mu_);
    Statement& st = *scan_;
    st.BindText(1, table);
    st.BindText(2, after);
    st.BindInt64(3, static_cast<int64_t>(limit) + 1);  // one more tells whether a page follows
    ScanPage page;
    SKIFF_RETURN_IF_ERROR(Query(st, [&](Statement& row) {
      if (page.items.size() == limit) {
        page.next = page.items.back().key;
        return;
      }
      page.items.push_back({std::string(row.ColumnText(0)), std::string(row.ColumnText(1))});
    }));
    return page;
  }

  StoreCounters counters() const override {
    return {statements_sent_.load(std::memory_order_relaxed),
            transactions_.load(std::memory_order_relaxed)};
  }

  Result<uint64_t> LastSyncId() override {
    MutexLock lock(&mu_);
    uint64_t last = 0;
    SKIFF_RETURN_IF_ERROR(Query(
        *last_sync_id_, [&](Statement& st) { last = static_cast<uint64_t>(st.ColumnInt64(0)); }));
    return last;
  }

  Result<std::map<std::string, uint64_t>> LastSyncIdByGroup() override {
    MutexLock lock(&mu_);
    std::map<std::string, uint64_t> out;
    SKIFF_RETURN_IF_ERROR(Query(*last_by_group_, [&](Statement& row) {
      out[std::string(row.ColumnText(0))] = static_cast<uint64_t>(row.ColumnInt64(1));
    }));
    return out;
  }

  Result<std::vector<Change>> ReadChanges(uint64_t after, const std::vector<std::string>& groups,
                                          size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateGroups(groups));
    const std::string group_list = JsonList(groups);
    MutexLock lock(&mu_);
    Statement& st = *read_changes_;
    st.BindInt64(1, static_cast<int64_t>(after));
    st.BindText(2, group_list);
    st.BindInt64(3, static_cast<int64_t>(limit));
    std::vector<Change> out;
    SKIFF_RETURN_IF_ERROR(Query(st, [&](Statement& row) {
      Change c;
      c.sync_id = static_cast<uint64_t>(row.ColumnInt64(0));
      c.group = row.ColumnText(1);
      c.table = row.ColumnText(2);
      c.key = row.ColumnText(3);
      if (!row.ColumnIsNull(4)) c.value = std::string(row.ColumnText(4));
      out.push_back(std::move(c));
    }));
    return out;
  }

  Result<SyncRowPage> ScanSyncRows(const std::vector<std::string>& groups,
                                   const SyncRowCursor& after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateSyncScan(groups, after, limit));
    // One range of the primary key per group, the groups in order from the
    // cursor's own, until one row more than the page (it tells whether a
    // page follows). Names are never empty, so ("", "") starts a group.
    std::vector<std::string_view> ordered(groups.begin(), groups.end());
    std::sort(ordered.begin(), ordered.end());
    ordered.erase(std::unique(ordered.begin(), ordered.end()), ordered.end());
    const size_t want = limit + 1;
    SyncRowPage page;
    page.rows.reserve(std::min(want, size_t{1024}));
    MutexLock lock(&mu_);
    Statement& st = *scan_sync_group_;
    for (std::string_view group : ordered) {
      if (page.rows.size() == want) break;
      if (group < after.group) continue;
      const bool resume = group == after.group;
      st.BindText(1, group);
      st.BindText(2, resume ? std::string_view(after.table) : std::string_view());
      st.BindText(3, resume ? std::string_view(after.key) : std::string_view());
      st.BindInt64(4, static_cast<int64_t>(want - page.rows.size()));
      SKIFF_RETURN_IF_ERROR(Query(st, [&](Statement& row) {
        page.rows.push_back(SyncRow{std::string(group), std::string(row.ColumnText(0)),
                                    std::string(row.ColumnText(1)), std::string(row.ColumnText(2)),
                                    static_cast<uint64_t>(row.ColumnInt64(3))});
      }));
    }
    if (page.rows.size() == want) {
      page.rows.pop_back();
      const SyncRow& last = page.rows.back();
      page.next = SyncRowCursor{last.group, last.table, last.key};
    }
    return page;
  }

  Result<std::optional<DeviceSeq>> GetDevice(std::string_view device) override {
    SKIFF_RETURN_IF_ERROR(ValidateDevice(device));
    MutexLock lock(&mu_);
    Statement& st = *get_device_;
    st.BindText(1, device);
    std::optional<DeviceSeq> found;
    SKIFF_RETURN_IF_ERROR(Query(st, [&](Statement& row) {
      found = DeviceSeq{std::string(device), std::string(row.ColumnText(0)),
                        static_cast<uint64_t>(row.ColumnInt64(1))};
    }));
    return found;
  }

 private:
  SqliteStore() = default;

  // Runs on db_ after each commit (so under mu_) with the WAL's size in
  // pages. The commit has happened: an error returned here would only make
  // a durable write look failed, so checkpoint trouble is not reported,
  // as SQLite's default hook does not report it either.
  static int OnWalCommit(void* self, sqlite3* db, const char* name, int pages) {
    if (pages >= kBlockingCheckpointPages) {
      static_cast<SqliteStore*>(self)->checkpointer_->RunExclusive([db, name] {
        (void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      });
    } else if (pages >= kBackgroundCheckpointPages) {
      static_cast<SqliteStore*>(self)->checkpointer_->Request();
    }
    return SQLITE_OK;
  }

  // journal_mode answers with the mode in force; anything but "wal" (a
  // read-only or in-memory file) would silently change the durability story.
  Status EnableWal() {
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<Statement> st,
                           Statement::Prepare(db_, "PRAGMA journal_mode=WAL"));
    std::string mode;
    SKIFF_RETURN_IF_ERROR(Query(*st, [&](Statement& row) { mode = row.ColumnText(0); }));
    if (mode != "wal")
      return Unavailable("SQLite file cannot use WAL (journal_mode is '" + mode + "')");
    return Status::Ok();
  }

  Status ExecScript(std::string_view sql) {
    uint64_t sent = 0;
    Status s = sqlite::ExecScript(db_, sql, &sent);
    statements_sent_.fetch_add(sent, std::memory_order_relaxed);
    return s;
  }

  Status Prepare() {
    auto make = [&](const char* sql, std::unique_ptr<Statement>* out) -> Status {
      SKIFF_ASSIGN_OR_RETURN(*out, Statement::Prepare(db_, sql));
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
    SKIFF_RETURN_IF_ERROR(
        make("INSERT INTO skiff_push(sync_id, grp, tbl, key, value, device, usr, last_seq) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
             &insert_push_));
    SKIFF_RETURN_IF_ERROR(
        make("INSERT INTO skiff_devices(device, usr, last_seq) VALUES (?1, ?2, ?3) "
             "ON CONFLICT(device) DO UPDATE SET usr = excluded.usr, last_seq = excluded.last_seq",
             &upsert_device_));
    SKIFF_RETURN_IF_ERROR(
        make("SELECT COALESCE(MAX(sync_id), 0) FROM skiff_changes", &last_sync_id_));
    SKIFF_RETURN_IF_ERROR(
        make("SELECT grp, MAX(sync_id) FROM skiff_changes GROUP BY grp", &last_by_group_));
    SKIFF_RETURN_IF_ERROR(
        make("SELECT sync_id, grp, tbl, key, value FROM skiff_changes "
             "WHERE sync_id > ?1 AND grp IN (SELECT value FROM json_each(?2)) "
             "ORDER BY sync_id LIMIT ?3",
             &read_changes_));
    SKIFF_RETURN_IF_ERROR(
        // A seek in the primary key and a walk along it. Asking for all of
        // the caller's groups in one statement (`grp IN (...)`, or two
        // ranges merged by UNION ALL) cost twice this per row, and without
        // the merge every page walked its group from the start.
        make("SELECT tbl, key, value, sync_id FROM skiff_sync_rows "
             "WHERE grp = ?1 AND (tbl, key) > (?2, ?3) ORDER BY tbl, key LIMIT ?4",
             &scan_sync_group_));
    SKIFF_RETURN_IF_ERROR(
        make("SELECT usr, last_seq FROM skiff_devices WHERE device = ?1", &get_device_));
    SKIFF_RETURN_IF_ERROR(make("BEGIN IMMEDIATE", &begin_));
    SKIFF_RETURN_IF_ERROR(make("COMMIT", &commit_));
    SKIFF_RETURN_IF_ERROR(make("ROLLBACK", &rollback_));
    return Status::Ok();
  }

  // Statements ApplyAll sends for `batch`: each change carries one of the
  // device numbers (the view skiff_push writes both), the rest go alone.
  static size_t StatementsFor(const WriteBatch& batch) {
    const size_t changes = batch.changes().size();
    const size_t devices = batch.device_seqs().size();
    return batch.size() + changes + (devices > changes ? devices - changes : 0);
  }

  // Every part of a batch, in order. Change i carries device number i, so
  // the numbers are still set in the order given (the latest wins).
  Status ApplyAll(const WriteBatch& batch) SKIFF_REQUIRES(mu_) {
    for (const WriteBatch::Op& op : batch.ops()) SKIFF_RETURN_IF_ERROR(Apply(op));
    const std::vector<DeviceSeq>& devices = batch.device_seqs();
    for (size_t i = 0; i < batch.changes().size(); ++i) {
      const Change& c = batch.changes()[i];
      Statement& push = *insert_push_;
      push.BindInt64(1, static_cast<int64_t>(c.sync_id));
      push.BindText(2, c.group);
      push.BindText(3, c.table);
      push.BindText(4, c.key);
      if (c.value) {
        push.BindText(5, *c.value);
      } else {
        push.BindNull(5);
      }
      if (i < devices.size()) {
        push.BindText(6, devices[i].device);
        push.BindText(7, devices[i].user);
        push.BindInt64(8, static_cast<int64_t>(devices[i].last_seq));
      } else {
        for (int column = 6; column <= 8; ++column) push.BindNull(column);
      }
      // The view's trigger logs the change and sets the device; the log's
      // triggers set or delete the synced row.
      SKIFF_RETURN_IF_ERROR(RunSimple(push));
    }
    for (size_t i = batch.changes().size(); i < devices.size(); ++i) {
      Statement& st = *upsert_device_;
      st.BindText(1, devices[i].device);
      st.BindText(2, devices[i].user);
      st.BindInt64(3, static_cast<int64_t>(devices[i].last_seq));
      SKIFF_RETURN_IF_ERROR(RunSimple(st));
    }
    return Status::Ok();
  }

  // Steps a bound query, calling `on_row` for each row, then resets it.
  template <typename OnRow>
  Status Query(Statement& st, OnRow&& on_row) {
    statements_sent_.fetch_add(1, std::memory_order_relaxed);
    for (;;) {
      Result<bool> row = st.Step();
      if (!row.ok()) return st.Reset(row.status());
      if (!*row) break;
      on_row(st);
    }
    return st.Reset(Status::Ok());
  }

  // Groups are validated names ([A-Za-z0-9_-]), so quoting needs no escapes;
  // the list is bound as one parameter and read with json_each.
  static std::string JsonList(const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ",\"" : "\"") + items[i] + "\"";
    return out + "]";
  }

  Status Apply(const WriteBatch::Op& op) SKIFF_REQUIRES(mu_) {
    Statement& st = op.kind == WriteBatch::Op::Kind::kPut ? *put_ : *delete_;
    st.BindText(1, op.table);
    st.BindText(2, op.key);
    if (op.kind == WriteBatch::Op::Kind::kPut) st.BindText(3, op.value);
    return RunSimple(st);
  }

  // Steps a statement that returns no rows, then resets it.
  Status RunSimple(Statement& st) {
    statements_sent_.fetch_add(1, std::memory_order_relaxed);
    Result<bool> row = st.Step();
    return st.Reset(row.status());
  }

  // Declared first so it is released last, after the file is closed.
  std::unique_ptr<internal::LockFile> lock_;
  // Declared before the statements so it is destroyed after them: a
  // connection closes cleanly once its statements are finalized.
  struct Connection {
    sqlite3* db = nullptr;
    ~Connection() { sqlite3_close_v2(db); }
  } connection_;
  sqlite3*& db_ = connection_.db;
  Mutex mu_;  // serialises every use of db_ and the statements
  // Set by Open before the store is shared, then used only under mu_.
  std::unique_ptr<Statement> get_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> put_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> delete_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> scan_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> begin_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> commit_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> rollback_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> insert_push_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> upsert_device_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> last_sync_id_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> last_by_group_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> read_changes_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> scan_sync_group_ SKIFF_PT_GUARDED_BY(mu_);
  std::unique_ptr<Statement> get_device_ SKIFF_PT_GUARDED_BY(mu_);
  std::atomic<uint64_t> statements_sent_{0};
  std::atomic<uint64_t> transactions_{0};
  // Last, so it stops before the statements and the connection go: the
  // writer's close then runs the final checkpoint and removes the WAL.
  std::unique_ptr<SqliteCheckpointer> checkpointer_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteOptions& options) {
  return SqliteStore::Open(path, options);
}

}  // namespace skiff::store
