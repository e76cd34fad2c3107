// PostgresStore: documents in PostgreSQL through libpqxx 6.4.
//
// One connection, serialised by a mutex; statements prepared once per
// connection. A batch of one op is one autocommit statement. A larger batch is
// folded to its net effect and written set-wise (BEGIN, one upsert over
// unnest() arrays, one delete, COMMIT), so a group commit of 100 writes costs
// 3 or 4 statements, not 102. A lost connection fails the call in flight with
// `unavailable` and is reopened by the next call.
#include <atomic>
#include <mutex>

#include <pqxx/pqxx>

#include "store/internal/coalesce.h"
#include "store/internal/pg_array.h"
#include "store/store.h"

namespace skiff::store {
namespace {

using internal::PgArrayOf;

std::string_view Sv(const std::string& s) { return s; }
std::string_view OpTable(const WriteBatch::Op* op) { return op->table; }
std::string_view OpKey(const WriteBatch::Op* op) { return op->key; }
std::string_view OpValue(const WriteBatch::Op* op) { return op->value; }
std::string Text(const pqxx::field& f) { return std::string(f.c_str(), f.size()); }

// Serialises schema creation between processes that open the same database.
constexpr const char* kSchema = R"sql(
SELECT pg_advisory_xact_lock(7283514);
CREATE TABLE IF NOT EXISTS skiff_meta(
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS skiff_documents(
  tbl   TEXT COLLATE "C" NOT NULL,
  key   TEXT COLLATE "C" NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (tbl, key)
);
CREATE TABLE IF NOT EXISTS skiff_changes(
  sync_id BIGINT PRIMARY KEY,
  grp     TEXT COLLATE "C" NOT NULL,
  tbl     TEXT COLLATE "C" NOT NULL,
  key     TEXT COLLATE "C" NOT NULL,
  value   TEXT
);
CREATE INDEX IF NOT EXISTS skiff_changes_by_group ON skiff_changes(grp, sync_id);
CREATE TABLE IF NOT EXISTS skiff_sync_rows(
  grp     TEXT COLLATE "C" NOT NULL,
  tbl     TEXT COLLATE "C" NOT NULL,
  key     TEXT COLLATE "C" NOT NULL,
  value   TEXT NOT NULL,
  sync_id BIGINT NOT NULL,
  PRIMARY KEY (grp, tbl, key)
);
CREATE TABLE IF NOT EXISTS skiff_devices(
  device   TEXT COLLATE "C" PRIMARY KEY,
  usr      TEXT NOT NULL,
  last_seq BIGINT NOT NULL
);
INSERT INTO skiff_meta(name, value) VALUES ('schema_version', '1') ON CONFLICT DO NOTHING;
)sql";
constexpr int kSchemaStatements = 8;  // the statements in kSchema, for the counter

void PrepareStatements(pqxx::connection& conn) {
  conn.prepare("get", "SELECT value FROM skiff_documents WHERE tbl = $1 AND key = $2");
  conn.prepare("put",
               "INSERT INTO skiff_documents(tbl, key, value) VALUES ($1, $2, $3) "
               "ON CONFLICT (tbl, key) DO UPDATE SET value = excluded.value");
  conn.prepare("delete", "DELETE FROM skiff_documents WHERE tbl = $1 AND key = $2");
  conn.prepare("put_many",
               "INSERT INTO skiff_documents(tbl, key, value) "
               "SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) "
               "ON CONFLICT (tbl, key) DO UPDATE SET value = excluded.value");
  conn.prepare("delete_many",
               "DELETE FROM skiff_documents d USING unnest($1::text[], $2::text[]) AS x(tbl, key) "
               "WHERE d.tbl = x.tbl COLLATE \"C\" AND d.key = x.key COLLATE \"C\"");
  conn.prepare(
      "insert_changes",
      "INSERT INTO skiff_changes(sync_id, grp, tbl, key, value) "
      "SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[])");
  conn.prepare("upsert_sync_rows",
               "INSERT INTO skiff_sync_rows(grp, tbl, key, value, sync_id) "
               "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) "
               "ON CONFLICT (grp, tbl, key) DO UPDATE SET value = excluded.value, "
               "sync_id = excluded.sync_id");
  conn.prepare("delete_sync_rows",
               "DELETE FROM skiff_sync_rows r "
               "USING unnest($1::text[], $2::text[], $3::text[]) AS x(grp, tbl, key) "
               "WHERE r.grp = x.grp COLLATE \"C\" AND r.tbl = x.tbl COLLATE \"C\" "
               "AND r.key = x.key COLLATE \"C\"");
  conn.prepare(
      "upsert_devices",
      "INSERT INTO skiff_devices(device, usr, last_seq) "
      "SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) "
      "ON CONFLICT (device) DO UPDATE SET usr = excluded.usr, last_seq = excluded.last_seq");
  conn.prepare("last_sync_id", "SELECT COALESCE(MAX(sync_id), 0) FROM skiff_changes");
  conn.prepare("last_by_group", "SELECT grp, MAX(sync_id) FROM skiff_changes GROUP BY grp");
  conn.prepare("read_changes",
               "SELECT sync_id, grp, tbl, key, value FROM skiff_changes "
               "WHERE sync_id > $1 AND grp = ANY($2::text[]) ORDER BY sync_id LIMIT $3");
  conn.prepare("scan_sync_rows",
               "SELECT grp, tbl, key, value, sync_id FROM skiff_sync_rows "
               "WHERE (grp, tbl, key) > ($1, $2, $3) AND grp = ANY($4::text[]) "
               "ORDER BY grp, tbl, key LIMIT $5");
  conn.prepare("get_device", "SELECT usr, last_seq FROM skiff_devices WHERE device = $1");
  conn.prepare("scan",
               "SELECT key, value FROM skiff_documents WHERE tbl = $1 AND key > $2 "
               "ORDER BY key LIMIT $3");
}

// Maps a libpqxx exception to a Status; sets *broken when the connection
// cannot be used again.
Status FromException(const std::exception& e, bool* broken) {
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr) {
    *broken = true;
    return Unavailable(std::string("PostgreSQL connection lost: ") + e.what());
  }
  if (dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    *broken = true;
    return Unavailable(std::string("PostgreSQL commit outcome unknown: ") + e.what());
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string state = sql->sqlstate();
    const std::string cls = state.substr(0, 2);
    if (cls == "08" || cls == "57" || cls == "53" || cls == "40") {
      *broken = cls != "40";
      return Unavailable("PostgreSQL unavailable (" + state + "): " + e.what());
    }
    if (cls == "22") return BadRequest("PostgreSQL rejected a value (" + state + "): " + e.what());
    return Internal("PostgreSQL error (" + state + "): " + e.what());
  }
  return Internal(std::string("PostgreSQL client error: ") + e.what());
}

class PostgresStore final : public Store {
 public:
  explicit PostgresStore(std::string url) : url_(std::move(url)) {}

  Status Connect() {
    std::lock_guard lock(mu_);
    return EnsureConnected();
  }

  std::string_view kind() const override { return "postgres"; }

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    SKIFF_RETURN_IF_ERROR(ValidateGet(table, key));
    std::optional<std::string> value;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      pqxx::result r = tx.exec_prepared("get", std::string(table), std::string(key));
      if (!r.empty()) value = std::string(r[0][0].c_str(), r[0][0].size());
    }));
    return value;
  }

  Status Write(const WriteBatch& batch) override {
    SKIFF_RETURN_IF_ERROR(ValidateBatch(batch));
    if (batch.empty()) return Status::Ok();
    if (batch.size() == 1 && !batch.has_sync()) {  // one statement, autocommit
      const WriteBatch::Op& op = batch.ops().front();
      return Run([&](pqxx::connection& conn) {
        pqxx::nontransaction tx(conn);
        Count(1);
        if (op.kind == WriteBatch::Op::Kind::kPut) {
          tx.exec_prepared("put", op.table, op.key, op.value);
        } else {
          tx.exec_prepared("delete", op.table, op.key);
        }
        transactions_.fetch_add(1, std::memory_order_relaxed);
      });
    }
    const internal::CoalescedBatch net = internal::Coalesce(batch);
    const internal::CoalescedChanges rows = internal::CoalesceChanges(batch);
    const std::vector<const DeviceSeq*> devices = internal::CoalesceDevices(batch);
    return Run([&](pqxx::connection& conn) {
      pqxx::work tx(conn);
      Count(1);  // BEGIN
      if (!net.puts.empty()) {
        Count(1);
        tx.exec_prepared("put_many", PgArrayOf(net.puts, OpTable), PgArrayOf(net.puts, OpKey),
                         PgArrayOf(net.puts, OpValue));
      }
      if (!net.deletes.empty()) {
        Count(1);
        tx.exec_prepared("delete_many", PgArrayOf(net.deletes, OpTable),
                         PgArrayOf(net.deletes, OpKey));
      }
      WriteChanges(tx, batch.changes(), rows, devices);
      Count(1);  // COMMIT
      tx.commit();
      transactions_.fetch_add(1, std::memory_order_relaxed);
    });
  }

  Result<ScanPage> Scan(std::string_view table, std::string_view after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateScan(table, after, limit));
    ScanPage page;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      // One row past the limit tells whether another page follows.
      pqxx::result r = tx.exec_prepared("scan", std::string(table), std::string(after),
                                        static_cast<long long>(limit) + 1);
      page = ScanPage();
      for (const auto& row : r) {
        if (page.items.size() == limit) {
          page.next = page.items.back().key;
          break;
        }
        page.items.push_back({std::string(row[0].c_str(), row[0].size()),
                              std::string(row[1].c_str(), row[1].size())});
      }
    }));
    return page;
  }

  StoreCounters counters() const override {
    return {statements_.load(std::memory_order_relaxed),
            transactions_.load(std::memory_order_relaxed)};
  }

  Result<uint64_t> LastSyncId() override {
    uint64_t last = 0;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      last = tx.exec_prepared("last_sync_id")[0][0].as<uint64_t>();
    }));
    return last;
  }

  Result<std::map<std::string, uint64_t>> LastSyncIdByGroup() override {
    std::map<std::string, uint64_t> out;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      out.clear();
      for (const auto& row : tx.exec_prepared("last_by_group")) {
        out[Text(row[0])] = row[1].as<uint64_t>();
      }
    }));
    return out;
  }

  Result<std::vector<Change>> ReadChanges(uint64_t after, const std::vector<std::string>& groups,
                                          size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateGroups(groups));
    std::vector<Change> out;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      pqxx::result r = tx.exec_prepared("read_changes", static_cast<long long>(after),
                                        PgArrayOf(groups, Sv), static_cast<long long>(limit));
      out.clear();
      for (const auto& row : r) {
        Change c;
        c.sync_id = row[0].as<uint64_t>();
        c.group = Text(row[1]);
        c.table = Text(row[2]);
        c.key = Text(row[3]);
        if (!row[4].is_null()) c.value = Text(row[4]);
        out.push_back(std::move(c));
      }
    }));
    return out;
  }

  Result<SyncRowPage> ScanSyncRows(const std::vector<std::string>& groups,
                                   const SyncRowCursor& after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateSyncScan(groups, after, limit));
    SyncRowPage page;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      pqxx::result r = tx.exec_prepared("scan_sync_rows", after.group, after.table, after.key,
                                        PgArrayOf(groups, Sv), static_cast<long long>(limit) + 1);
      page = SyncRowPage();
      for (const auto& row : r) {
        if (page.rows.size() == limit) {
          const SyncRow& last = page.rows.back();
          page.next = SyncRowCursor{last.group, last.table, last.key};
          break;
        }
        page.rows.push_back(
            SyncRow{Text(row[0]), Text(row[1]), Text(row[2]), Text(row[3]), row[4].as<uint64_t>()});
      }
    }));
    return page;
  }

  Result<std::optional<DeviceSeq>> GetDevice(std::string_view device) override {
    SKIFF_RETURN_IF_ERROR(ValidateDevice(device));
    std::optional<DeviceSeq> found;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      pqxx::result r = tx.exec_prepared("get_device", std::string(device));
      if (!r.empty()) {
        found = DeviceSeq{std::string(device), Text(r[0][0]), r[0][1].as<uint64_t>()};
      }
    }));
    return found;
  }

 private:
  void Count(uint64_t n) { statements_.fetch_add(n, std::memory_order_relaxed); }

  // The sync part of a batch: the log, the synced rows, the devices; one
  // statement for each part that has anything to write.
  void WriteChanges(pqxx::work& tx, const std::vector<Change>& changes,
                    const internal::CoalescedChanges& rows,
                    const std::vector<const DeviceSeq*>& devices) {
    if (!changes.empty()) {
      std::vector<std::string> ids;
      ids.reserve(changes.size());
      for (const Change& c : changes) ids.push_back(std::to_string(c.sync_id));
      Count(1);
      tx.exec_prepared("insert_changes", PgArrayOf(ids, Sv),
                       PgArrayOf(changes, [](const Change& c) { return Sv(c.group); }),
                       PgArrayOf(changes, [](const Change& c) { return Sv(c.table); }),
                       PgArrayOf(changes, [](const Change& c) { return Sv(c.key); }),
                       PgArrayOf(changes, [](const Change& c) -> std::optional<std::string_view> {
                         if (!c.value) return std::nullopt;
                         return *c.value;
                       }));
    }
    if (!rows.upserts.empty()) {
      std::vector<std::string> ids;
      for (const Change* c : rows.upserts) ids.push_back(std::to_string(c->sync_id));
      Count(1);
      tx.exec_prepared("upsert_sync_rows",
                       PgArrayOf(rows.upserts, [](const Change* c) { return Sv(c->group); }),
                       PgArrayOf(rows.upserts, [](const Change* c) { return Sv(c->table); }),
                       PgArrayOf(rows.upserts, [](const Change* c) { return Sv(c->key); }),
                       PgArrayOf(rows.upserts, [](const Change* c) { return Sv(*c->value); }),
                       PgArrayOf(ids, Sv));
    }
    if (!rows.deletes.empty()) {
      Count(1);
      tx.exec_prepared("delete_sync_rows",
                       PgArrayOf(rows.deletes, [](const Change* c) { return Sv(c->group); }),
                       PgArrayOf(rows.deletes, [](const Change* c) { return Sv(c->table); }),
                       PgArrayOf(rows.deletes, [](const Change* c) { return Sv(c->key); }));
    }
    if (!devices.empty()) {
      std::vector<std::string> seqs;
      for (const DeviceSeq* d : devices) seqs.push_back(std::to_string(d->last_seq));
      Count(1);
      tx.exec_prepared(
          "upsert_devices", PgArrayOf(devices, [](const DeviceSeq* d) { return Sv(d->device); }),
          PgArrayOf(devices, [](const DeviceSeq* d) { return Sv(d->user); }), PgArrayOf(seqs, Sv));
    }
  }

  Status EnsureConnected() {  // REQUIRES(mu_)
    if (conn_ && conn_->is_open()) return Status::Ok();
    conn_.reset();
    try {
      auto conn = std::make_unique<pqxx::connection>(url_);
      {
        pqxx::work tx(*conn);
        tx.exec(kSchema);
        tx.commit();
      }
      Count(kSchemaStatements + 2);
      PrepareStatements(*conn);
      conn_ = std::move(conn);
      return Status::Ok();
    } catch (const std::exception& e) {
      bool broken = false;
      Status s = FromException(e, &broken);
      return Unavailable("cannot open PostgreSQL store: " + s.message());
    }
  }

  // Runs `body` on a live connection; library exceptions become a Status.
  template <typename Body>
  Status Run(Body&& body) {
    std::lock_guard lock(mu_);
    SKIFF_RETURN_IF_ERROR(EnsureConnected());
    try {
      body(*conn_);
      return Status::Ok();
    } catch (const std::exception& e) {
      bool broken = false;
      Status s = FromException(e, &broken);
      if (broken || !conn_->is_open()) conn_.reset();
      return s;
    }
  }

  const std::string url_;
  std::mutex mu_;
  std::unique_ptr<pqxx::connection> conn_;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> statements_{0};
  std::atomic<uint64_t> transactions_{0};
};

}  // namespace

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url) {
  auto store = std::make_unique<PostgresStore>(url);
  SKIFF_RETURN_IF_ERROR(store->Connect());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace skiff::store
