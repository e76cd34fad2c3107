// PostgresStore: documents in PostgreSQL through libpqxx 6.4.
//
// One connection, serialised by a mutex; statements prepared once per
// connection. A batch of one document op is one autocommit statement. Any
// other batch (a group commit of many writes, a sync push with its change
// log, synced rows and device sequences) is folded to its net effect and
// written set-wise by one autocommit statement of data-modifying CTEs over
// unnest() arrays (write_all), so a group commit of 100 writes or a push
// costs one statement and one round trip; in cluster mode the same
// statement checks the batch's fences first.
//
// Deadlines: the server cancels a statement past statement_timeout or a lock
// wait past lock_timeout (both SET on each connection), and a SocketDeadline
// shuts the socket of a call still blocked after call_timeout, so a frozen
// server or a dead link fails the call instead of holding it. A lost or
// timed-out connection fails the call in flight with `unavailable` and is
// reopened by the next call.
//
// Commit marks: a connection lost during COMMIT (or during an autocommit
// write) leaves its outcome open. Every write therefore also upserts this
// store's row of skiff_commit_marks (instance, seq) with the write's number,
// in a CTE of a statement the write sends anyway, so statements per write do
// not grow and the table holds one row per store opened, never one per
// write. After a lost outcome the store reconnects, makes sure the old
// backend has ended (its transaction is then committed or aborted for good),
// and reads its row: our number means committed (OK), anything else means
// not applied (unavailable); when it cannot find out within call_timeout the
// answer is outcome_unknown.
//
// Instance guard: an exclusive store takes a session advisory lock keyed by
// the database and schema on every connection it opens, before serving.
// Failing to get it (another server holds it) fails the open, or, after a
// reconnect, the call, so a second owner is never silent. The lock ends with
// the session, so a killed server frees it at once.
// A cluster instance takes the same lock shared: cluster instances coexist,
// and the exclusive and the shared form refuse each other.
//
// Cluster sync (CommitSync): the row of skiff_sync_counter, locked for the
// transaction, orders sync commits across servers; the batch is numbered
// from it and written by write_all, which also sets the counter. NotifySync sends the
// NOTIFY after the commit, never inside it (docs/cluster.md).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <pqxx/pqxx>

#include "base/mutex.h"
#include "store/change_listener.h"
#include "store/internal/coalesce.h"
#include "store/internal/pg_array.h"
#include "store/internal/pg_url.h"
#include "store/internal/socket_deadline.h"
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
CREATE TABLE IF NOT EXISTS skiff_commit_marks(
  instance TEXT COLLATE "C" PRIMARY KEY,
  seq      BIGINT NOT NULL,
  at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS skiff_sync_counter(
  id      INT PRIMARY KEY CHECK (id = 1),
  last_id BIGINT NOT NULL
);
INSERT INTO skiff_sync_counter(id, last_id) VALUES (1, 0) ON CONFLICT DO NOTHING;
INSERT INTO skiff_meta(name, value) VALUES ('schema_version', '1') ON CONFLICT DO NOTHING;
)sql";
constexpr int kSchemaStatements = 11;  // the statements in kSchema, for the counter

// Key class of the instance guard's advisory lock (two-int form, so it can
// never meet the one-bigint schema lock above).
constexpr int kGuardClass = 7283515;
constexpr const char* kGuardKey = "hashtext(current_database() || '/' || current_schema())";

// The CTE that writes the commit mark: (instance, seq) are parameters
// `first` and `first` + 1; `where` may make the write conditional.
std::string MarkCte(int first, const std::string& where = "") {
  return "skiff_mark AS (INSERT INTO skiff_commit_marks(instance, seq) SELECT $" +
         std::to_string(first) + "::text, $" + std::to_string(first + 1) + "::bigint" + where +
         " ON CONFLICT (instance) DO UPDATE SET seq = excluded.seq, at = now())";
}

// `sql`, a write statement with `params` parameters of its own, with the
// commit mark's CTE in front.
std::string Marked(const std::string& sql, int params) {
  return "WITH " + MarkCte(params + 1) + " " + sql;
}

// Prepares `sql` as `name` and, marked, as `name` + "+m".
void PrepareWrite(pqxx::connection& conn, const std::string& name, const std::string& sql,
                  int params) {
  conn.prepare(name, sql);
  conn.prepare(name + "+m", Marked(sql, params));
}

// A whole batch in one statement, so a batch needs no BEGIN and COMMIT of
// its own: the documents' net puts ($1-$3) and deletes ($4, $5), the change
// log ($6-$10), the devices' sequences ($11-$13), then what `kind` adds, then
// the commit mark (instance, seq). Each part is a data-modifying CTE over
// unnest() arrays (an empty array writes nothing). The synced rows are
// derived from the log rows the statement inserts, the last change to
// each row winning, so a value crosses the wire once. The parts touch
// disjoint rows (documents and changes are folded to one per key first),
// which one statement requires. The statement returns one boolean: false
// when a fence did not hold and nothing was written.
enum class WriteAllKind {
  kPlain,
  // Also sets the cluster's sync counter ($14).
  kCounted,
  // Cluster mode's fencing: partitions ($14), owners ($15) and epochs
  // ($16) of the batch's distinct fences, and their count ($17). Every
  // part, the mark too, writes only when each of them is still owned at
  // its epoch. The partition rows are locked FOR KEY SHARE before anything
  // is written (each part's condition is evaluated before its first row)
  // and stay locked until the statement commits, so a claim, which locks
  // them FOR UPDATE, waits for this write and cannot slip in between.
  kFenced,
};
std::string WriteAllSql(WriteAllKind kind) {
  std::string with = "WITH ";
  std::string where, and_held, counter;
  int next = 14;
  if (kind == WriteAllKind::kFenced) {
    with +=
        "fence AS (SELECT p.partition FROM skiff_partitions p JOIN unnest($14::int[], "
        "$15::bigint[], $16::bigint[]) AS f(partition, owner, epoch) ON p.partition = "
        "f.partition AND p.owner = f.owner AND p.epoch = f.epoch FOR KEY SHARE OF p), "
        "held AS (SELECT count(*) = $17::bigint AS ok FROM fence), ";
    where = " WHERE (SELECT ok FROM held)";
    and_held = " AND (SELECT ok FROM held)";
    next = 18;
  } else if (kind == WriteAllKind::kCounted) {
    counter = ", counter AS (UPDATE skiff_sync_counter SET last_id = $14 WHERE id = 1)";
    next = 15;
  }
  return with +
         "put_docs AS (INSERT INTO skiff_documents(tbl, key, value) "
         "SELECT * FROM unnest($1::text[], $2::text[], $3::text[])" +
         where +
         " ON CONFLICT (tbl, key) DO UPDATE SET value = excluded.value), "
         "delete_docs AS (DELETE FROM skiff_documents d "
         "USING unnest($4::text[], $5::text[]) AS x(tbl, key) "
         "WHERE d.tbl = x.tbl COLLATE \"C\" AND d.key = x.key COLLATE \"C\"" +
         and_held +
         "), "
         "log AS (INSERT INTO skiff_changes(sync_id, grp, tbl, key, value) "
         "SELECT * FROM unnest($6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[])" +
         where +
         " RETURNING sync_id, grp, tbl, key, value), "
         "latest AS (SELECT DISTINCT ON (grp, tbl, key) grp, tbl, key, value, sync_id FROM log "
         "ORDER BY grp, tbl, key, sync_id DESC), "
         "put_rows AS (INSERT INTO skiff_sync_rows(grp, tbl, key, value, sync_id) "
         "SELECT grp, tbl, key, value, sync_id FROM latest WHERE value IS NOT NULL "
         "ON CONFLICT (grp, tbl, key) DO UPDATE SET value = excluded.value, "
         "sync_id = excluded.sync_id), "
         "delete_rows AS (DELETE FROM skiff_sync_rows r USING latest x WHERE x.value IS NULL "
         "AND r.grp = x.grp AND r.tbl = x.tbl AND r.key = x.key), "
         "devices AS (INSERT INTO skiff_devices(device, usr, last_seq) "
         "SELECT * FROM unnest($11::text[], $12::text[], $13::bigint[])" +
         where +
         " ON CONFLICT (device) DO UPDATE SET usr = excluded.usr, last_seq = excluded.last_seq), " +
         MarkCte(next, where) + counter +
         (kind == WriteAllKind::kFenced ? " SELECT ok FROM held" : " SELECT true");
}

void PrepareStatements(pqxx::connection& conn) {
  conn.prepare("get", "SELECT value FROM skiff_documents WHERE tbl = $1 AND key = $2");
  PrepareWrite(conn, "put",
               "INSERT INTO skiff_documents(tbl, key, value) VALUES ($1, $2, $3) "
               "ON CONFLICT (tbl, key) DO UPDATE SET value = excluded.value",
               3);
  PrepareWrite(conn, "delete", "DELETE FROM skiff_documents WHERE tbl = $1 AND key = $2", 2);
  // Every batch carries its commit mark (see above), so only marked forms.
  conn.prepare("write_all+m", WriteAllSql(WriteAllKind::kPlain));
  conn.prepare("write_all_counted+m", WriteAllSql(WriteAllKind::kCounted));
  conn.prepare("write_all_fenced+m", WriteAllSql(WriteAllKind::kFenced));
  conn.prepare("commit_mark", "SELECT seq FROM skiff_commit_marks WHERE instance = $1");
  conn.prepare("last_sync_id", "SELECT COALESCE(MAX(sync_id), 0) FROM skiff_changes");
  conn.prepare("last_by_group", "SELECT grp, MAX(sync_id) FROM skiff_changes GROUP BY grp");
  conn.prepare("read_changes",
               "SELECT sync_id, grp, tbl, key, value FROM skiff_changes "
               "WHERE sync_id > $1 AND grp = ANY($2::text[]) ORDER BY sync_id LIMIT $3");
  // A page is the rest of the cursor's group, then the caller's later groups
  // from their start: each an index scan that begins where its rows begin.
  // One statement, `(grp, tbl, key) > (...) AND grp = ANY(...)`, began each
  // page at the start of the cursor's group and walked to the cursor, so a
  // paged bootstrap cost the square of its rows.
  conn.prepare("scan_sync_rows_in_group",
               "SELECT grp, tbl, key, value, sync_id FROM skiff_sync_rows "
               "WHERE grp = $1 AND (tbl, key) > ($2, $3) ORDER BY tbl, key LIMIT $4");
  conn.prepare("scan_sync_rows_of_groups",
               "SELECT grp, tbl, key, value, sync_id FROM skiff_sync_rows "
               "WHERE grp = ANY($1::text[]) ORDER BY grp, tbl, key LIMIT $2");
  conn.prepare("get_device", "SELECT usr, last_seq FROM skiff_devices WHERE device = $1");
  // Cluster sync. The counter row's lock orders sync commits across servers.
  conn.prepare("lock_sync_counter",
               "SELECT last_id FROM skiff_sync_counter WHERE id = 1 FOR UPDATE");
  conn.prepare("get_devices",
               "SELECT device, usr, last_seq FROM skiff_devices WHERE device = ANY($1::text[])");
  // Tells the other cluster instances (payload: the commit's last sync id).
  conn.prepare("notify_sync", std::string("SELECT pg_notify(") + kSyncChannelSql + ", $1)");
  conn.prepare("last_by_group_since",
               "SELECT grp, MAX(sync_id) FROM skiff_changes WHERE sync_id > $1 GROUP BY grp");
  conn.prepare("scan",
               "SELECT key, value FROM skiff_documents WHERE tbl = $1 AND key > $2 "
               "ORDER BY key LIMIT $3");
}

// Maps a libpqxx exception to a Status; sets *broken when the connection
// cannot be used again.
Status FromException(const std::exception& e, bool* broken) {
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    *broken = true;
    return Unavailable(std::string("PostgreSQL connection lost: ") + e.what());
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string state = sql->sqlstate();
    const std::string cls = state.substr(0, 2);
    // 57014: statement_timeout (or a cancel); 55P03: lock_timeout. The
    // connection is fine; the statement was refused.
    if (state == "57014" || state == "55P03") {
      return Unavailable("PostgreSQL timed out (" + state + "): " + e.what());
    }
    if (cls == "08" || cls == "57" || cls == "53" || cls == "40") {
      *broken = cls != "40";
      return Unavailable("PostgreSQL unavailable (" + state + "): " + e.what());
    }
    if (cls == "22") return BadRequest("PostgreSQL rejected a value (" + state + "): " + e.what());
    return Internal("PostgreSQL error (" + state + "): " + e.what());
  }
  return Internal(std::string("PostgreSQL client error: ") + e.what());
}

// 128 random bits as hex: names this store's commit mark row.
std::string RandomInstanceId() {
  std::random_device entropy;
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    uint32_t word = entropy();
    for (int j = 0; j < 8; ++j, word >>= 4) out += kHex[word & 15];
  }
  return out;
}

// The backend a connection talks to: its pid and start time, which
// together name it even after the pid is reused.
struct Backend {
  int pid = 0;
  long long started_us = 0;
};

class PostgresStore final : public Store {
 public:
  PostgresStore(std::string url, const PostgresOptions& options)
      : url_(std::move(url)),
        options_(options),
        instance_(RandomInstanceId()),
        deadline_(options.call_timeout) {}

  Status Connect() {
    MutexLock lock(&mu_);
    const auto give_up = std::chrono::steady_clock::now() + options_.wait_for_server;
    auto backoff = std::chrono::milliseconds(100);
    for (;;) {
      Status s = EnsureConnected();
      if (s.ok()) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          give_up - std::chrono::steady_clock::now());
      // Only an unreachable server is waited for: a refusal (the instance
      // lock, a bad schema) will not go away by waiting.
      if (!unreachable_ || left.count() <= 0) return s;
      if (options_.on_wait) options_.on_wait(s, left);
      std::this_thread::sleep_for(std::min(backoff, left));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    }
    // Marks of stores long closed; a live store's row is rewritten by its
    // next write anyway. One statement per open.
    return RunLocked([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      tx.exec("DELETE FROM skiff_commit_marks WHERE at < now() - interval '7 days'");
      if (options_.cluster) {
        // A server not in cluster mode numbers changes without the counter:
        // the counter never starts below what it wrote. Under the row lock,
        // so a cluster commit in flight is not undone.
        Count(1);
        tx.exec(
            "UPDATE skiff_sync_counter SET last_id = GREATEST(last_id, "
            "(SELECT COALESCE(MAX(sync_id), 0) FROM skiff_changes)) WHERE id = 1");
      }
    });
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
    MutexLock lock(&mu_);
    SKIFF_RETURN_IF_ERROR(EnsureConnected());
    const uint64_t mark = ++last_mark_;
    const std::string mark_text = std::to_string(mark);
    // Set just before the statement that commits is sent: a connection
    // lost after it leaves the outcome open.
    bool commit_sent = false;
    bool lost = false;
    bool fenced_out = false;
    Status s;
    if (batch.size() == 1 && !batch.has_sync() && batch.fences().empty()) {  // autocommit
      const WriteBatch::Op& op = batch.ops().front();
      s = RunLocked(
          [&](pqxx::connection& conn) {
            pqxx::nontransaction tx(conn);
            Count(1);
            commit_sent = true;
            if (op.kind == WriteBatch::Op::Kind::kPut) {
              tx.exec_prepared("put+m", op.table, op.key, op.value, instance_, mark_text);
            } else {
              tx.exec_prepared("delete+m", op.table, op.key, instance_, mark_text);
            }
          },
          &lost);
    } else {  // one statement, its own transaction
      const WriteAllArgs args = WriteAllArgs::Of(batch);
      s = RunLocked(
          [&](pqxx::connection& conn) {
            pqxx::nontransaction tx(conn);
            Count(1);
            commit_sent = true;
            if (batch.fences().empty()) {
              ExecWriteAll(tx, "write_all+m", args, instance_, mark_text);
              return;
            }
            const FenceArgs fences = FenceArgs::Of(batch.fences());
            pqxx::result r =
                ExecWriteAll(tx, "write_all_fenced+m", args, fences.partitions, fences.owners,
                             fences.epochs, fences.count, instance_, mark_text);
            fenced_out = !r[0][0].as<bool>();
          },
          &lost);
    }
    if (fenced_out) {  // the statement ran and wrote nothing
      return Unavailable(
          "this instance no longer owns a partition of this write (another instance took it "
          "over); nothing was written");
    }
    if (s.ok()) {
      transactions_.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    // Lost before the commit was sent: the server never got a COMMIT (or
    // the statement), so the transaction cannot have committed.
    if (!lost || !commit_sent) return s;
    Status checked = CheckCommit(mark, s);
    if (checked.ok()) transactions_.fetch_add(1, std::memory_order_relaxed);
    return checked;
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
    // The caller's groups after the cursor's, in key order ("C" collation).
    std::vector<std::string_view> later;
    for (const std::string& g : groups) {
      if (g > after.group) later.push_back(g);
    }
    std::sort(later.begin(), later.end());
    later.erase(std::unique(later.begin(), later.end()), later.end());
    const bool in_cursor_group = !after.group.empty() && std::find(groups.begin(), groups.end(),
                                                                   after.group) != groups.end();
    SyncRowPage page;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      page = SyncRowPage();
      // One row past the page says whether another follows.
      const size_t wanted = limit + 1;
      const auto take = [&](const pqxx::result& r) {
        for (const auto& row : r) {
          page.rows.push_back(SyncRow{Text(row[0]), Text(row[1]), Text(row[2]), Text(row[3]),
                                      row[4].as<uint64_t>()});
        }
      };
      if (in_cursor_group) {
        Count(1);
        take(tx.exec_prepared("scan_sync_rows_in_group", after.group, after.table, after.key,
                              static_cast<long long>(wanted)));
      }
      if (page.rows.size() < wanted && !later.empty()) {
        Count(1);
        take(tx.exec_prepared("scan_sync_rows_of_groups",
                              PgArrayOf(later, [](std::string_view g) { return g; }),
                              static_cast<long long>(wanted - page.rows.size())));
      }
      if (page.rows.size() > limit) {
        page.rows.resize(limit);
        const SyncRow& last = page.rows.back();
        page.next = SyncRowCursor{last.group, last.table, last.key};
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

  Result<std::map<std::string, uint64_t>> LastSyncIdByGroupSince(uint64_t after) override {
    std::map<std::string, uint64_t> out;
    SKIFF_RETURN_IF_ERROR(Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      out.clear();
      for (const auto& row :
           tx.exec_prepared("last_by_group_since", static_cast<long long>(after))) {
        out[Text(row[0])] = row[1].as<uint64_t>();
      }
    }));
    return out;
  }

  // BEGIN, the counter's lock, the devices' records, the batch in one
  // statement that also sets the counter and carries the commit mark, COMMIT.
  Result<uint64_t> CommitSync(const std::vector<std::string>& devices,
                              const SyncBatchBuilder& build) override {
    for (const std::string& device : devices) SKIFF_RETURN_IF_ERROR(ValidateDevice(device));
    uint64_t last = 0;
    {
      MutexLock lock(&mu_);
      SKIFF_RETURN_IF_ERROR(EnsureConnected());
      const uint64_t mark = ++last_mark_;
      const std::string mark_text = std::to_string(mark);
      bool commit_sent = false;
      bool lost = false;
      Status refused;  // the built batch is not one this call may write
      Status s = RunLocked(
          [&](pqxx::connection& conn) {
            pqxx::work tx(conn);
            Count(2);  // BEGIN, the lock
            const uint64_t counter = tx.exec_prepared("lock_sync_counter")[0][0].as<uint64_t>();
            std::map<std::string, DeviceSeq, std::less<>> records;
            if (!devices.empty()) {
              // After the lock, so it sees every commit that held it before.
              Count(1);
              for (const auto& row : tx.exec_prepared("get_devices", PgArrayOf(devices, Sv))) {
                DeviceSeq d{Text(row[0]), Text(row[1]), row[2].as<uint64_t>()};
                records.emplace(d.device, std::move(d));
              }
            }
            WriteBatch batch;
            build(counter, records, &batch);
            refused = CheckSyncBatch(batch, counter);
            if (!refused.ok()) {
              Count(1);  // ROLLBACK, as the transaction ends unfinished
              return;
            }
            last = counter + batch.changes().size();
            if (!batch.empty()) {
              Count(1);
              ExecWriteAll(tx, "write_all_counted+m", WriteAllArgs::Of(batch),
                           static_cast<long long>(last), instance_, mark_text);
            }
            Count(1);  // COMMIT
            commit_sent = !batch.empty();
            tx.commit();
          },
          &lost);
      if (!refused.ok()) return refused;
      if (!s.ok()) {
        // Nothing written, or the commit not sent: nothing can have landed.
        if (!lost || !commit_sent) return s;
        SKIFF_RETURN_IF_ERROR(CheckCommit(mark, s));
      }
      if (commit_sent) transactions_.fetch_add(1, std::memory_order_relaxed);
    }
    return last;
  }

  Status NotifySync(uint64_t last) override {
    return Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      tx.exec_prepared("notify_sync", std::to_string(last));
    });
  }

 private:
  void Count(uint64_t n) { statements_.fetch_add(n, std::memory_order_relaxed); }

  // The parameters of write_all_fenced for a batch's fences: each distinct
  // (partition, owner, epoch) once. Two epochs of one partition cannot both
  // hold, so a mix fails too.
  struct FenceArgs {
    std::string partitions, owners, epochs, count;

    static FenceArgs Of(const std::vector<WriteBatch::Fence>& fences) {
      std::set<std::tuple<uint32_t, uint64_t, uint64_t>> distinct;
      for (const WriteBatch::Fence& f : fences) distinct.emplace(f.partition, f.owner, f.epoch);
      std::vector<std::string> partitions, owners, epochs;
      for (const auto& [partition, owner, epoch] : distinct) {
        partitions.push_back(std::to_string(partition));
        owners.push_back(std::to_string(owner));
        epochs.push_back(std::to_string(epoch));
      }
      return {PgArrayOf(partitions, Sv), PgArrayOf(owners, Sv), PgArrayOf(epochs, Sv),
              std::to_string(distinct.size())};
    }
  };

  // A batch CommitSync may write: valid, no document ops, and changes
  // numbered on from the counter without a gap.
  static Status CheckSyncBatch(const WriteBatch& batch, uint64_t counter) {
    SKIFF_RETURN_IF_ERROR(ValidateBatch(batch));
    if (!batch.ops().empty()) return Internal("a sync commit carries no document ops");
    uint64_t expected = counter;
    for (const Change& c : batch.changes()) {
      if (c.sync_id != ++expected) {
        return Internal("sync commit numbered " + std::to_string(c.sync_id) + " where " +
                        std::to_string(expected) + " was next");
      }
    }
    return Status::Ok();
  }

  // The array parameters of write_all for `batch`, in their order.
  struct WriteAllArgs {
    std::string put_tables, put_keys, put_values, delete_tables, delete_keys;
    std::string sync_ids, groups, tables, keys, values;
    std::string devices, users, seqs;

    static WriteAllArgs Of(const WriteBatch& batch) {
      WriteAllArgs a;
      const internal::CoalescedBatch net = internal::Coalesce(batch);
      a.put_tables = PgArrayOf(net.puts, OpTable);
      a.put_keys = PgArrayOf(net.puts, OpKey);
      a.put_values = PgArrayOf(net.puts, OpValue);
      a.delete_tables = PgArrayOf(net.deletes, OpTable);
      a.delete_keys = PgArrayOf(net.deletes, OpKey);
      const std::vector<Change>& changes = batch.changes();
      std::vector<std::string> ids;
      ids.reserve(changes.size());
      for (const Change& c : changes) ids.push_back(std::to_string(c.sync_id));
      a.sync_ids = PgArrayOf(ids, Sv);
      a.groups = PgArrayOf(changes, [](const Change& c) { return Sv(c.group); });
      a.tables = PgArrayOf(changes, [](const Change& c) { return Sv(c.table); });
      a.keys = PgArrayOf(changes, [](const Change& c) { return Sv(c.key); });
      a.values = PgArrayOf(changes, [](const Change& c) -> std::optional<std::string_view> {
        if (!c.value) return std::nullopt;
        return *c.value;
      });
      const std::vector<const DeviceSeq*> devices = internal::CoalesceDevices(batch);
      std::vector<std::string> seqs;
      seqs.reserve(devices.size());
      for (const DeviceSeq* d : devices) seqs.push_back(std::to_string(d->last_seq));
      a.devices = PgArrayOf(devices, [](const DeviceSeq* d) { return Sv(d->device); });
      a.users = PgArrayOf(devices, [](const DeviceSeq* d) { return Sv(d->user); });
      a.seqs = PgArrayOf(seqs, Sv);
      return a;
    }
  };

  // Sends write_all (or its variant `name`) with `a`, then `extra`.
  template <typename Tx, typename... Extra>
  static pqxx::result ExecWriteAll(Tx& tx, const char* name, const WriteAllArgs& a,
                                   Extra&&... extra) {
    return tx.exec_prepared(name, a.put_tables, a.put_keys, a.put_values, a.delete_tables,
                            a.delete_keys, a.sync_ids, a.groups, a.tables, a.keys, a.values,
                            a.devices, a.users, a.seqs, std::forward<Extra>(extra)...);
  }

  // After a connection was lost with write `mark`'s commit sent: reconnects
  // (EnsureConnected waits for the old backend to end) and reads this
  // store's mark. `cause` is the error the write met.
  Status CheckCommit(uint64_t mark, const Status& cause) SKIFF_REQUIRES(mu_) {
    const auto give_up = std::chrono::steady_clock::now() + options_.call_timeout;
    Status connected;
    for (;;) {
      connected = EnsureConnected();
      if (connected.ok() || std::chrono::steady_clock::now() >= give_up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!connected.ok()) {
      return OutcomeUnknown("PostgreSQL connection lost at commit (" + cause.message() +
                            "), and the check of its outcome failed: " + connected.message());
    }
    std::optional<uint64_t> stored;
    Status read = RunLocked([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      pqxx::result r = tx.exec_prepared("commit_mark", instance_);
      if (!r.empty()) stored = r[0][0].as<uint64_t>();
    });
    if (!read.ok()) {
      return OutcomeUnknown("PostgreSQL connection lost at commit (" + cause.message() +
                            "), and the check of its outcome failed: " + read.message());
    }
    if (stored == mark) return Status::Ok();  // it committed; only the answer was lost
    return Unavailable("PostgreSQL connection lost at commit (" + cause.message() +
                       "); checked after reconnecting: nothing was applied");
  }

  // Runs one statement on `conn` under the deadline, reading its rows.
  pqxx::result Exec(pqxx::connection& conn, const std::string& sql) {
    pqxx::nontransaction tx(conn);
    return tx.exec(sql);
  }

  // Waits (bounded by the deadline of the call) until `old` is no longer a
  // live backend, asking it to end once. Until then its transaction may
  // still commit, and it may still hold the instance lock.
  void EndBackend(pqxx::connection& conn, const Backend& old) {
    const std::string where = " FROM pg_stat_activity WHERE pid = " + std::to_string(old.pid) +
                              " AND (extract(epoch FROM backend_start) * 1000000)::bigint = " +
                              std::to_string(old.started_us);
    Count(1);
    if (Exec(conn, "SELECT 1" + where).empty()) return;
    try {
      Count(1);
      Exec(conn, "SELECT pg_terminate_backend(pid)" + where);
    } catch (const pqxx::sql_error&) {
      // Not allowed to end it (another role): wait for it to end by itself.
    }
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      Count(1);
    } while (!Exec(conn, "SELECT 1" + where).empty());
  }

  // Opens the connection when there is none: deadlines, schema, statements,
  // the end of the previous backend, the instance lock. unavailable when any
  // of it fails, the lock included.
  Status EnsureConnected() SKIFF_REQUIRES(mu_) {
    if (conn_ && conn_->is_open()) return Status::Ok();
    Drop();
    std::unique_ptr<pqxx::connection> conn;
    unreachable_ = false;
    try {
      conn = std::make_unique<pqxx::connection>(url_);  // bounded by connect_timeout
    } catch (const std::exception& e) {
      bool broken = false;
      Status s = FromException(e, &broken);
      unreachable_ = broken;
      return Unavailable("cannot open PostgreSQL store: " + s.message());
    }
    // libpqxx 6 would otherwise reopen a broken connection silently, as a
    // new session without our lock, settings or statements.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    conn->inhibit_reactivation(true);
#pragma GCC diagnostic pop
    deadline_.Arm(conn->sock());
    Status s;
    Backend backend;
    try {
      {
        pqxx::work tx(*conn);
        // The deadlines after the schema: its lock may wait for another
        // store creating the same schema (the call deadline bounds that).
        tx.exec(std::string(kSchema) +
                "SET statement_timeout = " + std::to_string(options_.statement_timeout.count()) +
                "; SET lock_timeout = " + std::to_string(options_.lock_timeout.count()) + ";");
        tx.commit();
      }
      Count(kSchemaStatements + 4);  // BEGIN, the two SETs, the schema, COMMIT
      PrepareStatements(*conn);
      if (previous_.pid != 0) EndBackend(*conn, previous_);
      Count(1);
      pqxx::result r = Exec(
          *conn,
          std::string("SELECT ") +
              (options_.exclusive ? GuardLockCall("pg_try_advisory_lock") : std::string("true")) +
              ", pg_backend_pid(), (extract(epoch FROM backend_start) * 1000000)::bigint "
              "FROM pg_stat_activity WHERE pid = pg_backend_pid()");
      backend.pid = r[0][1].as<int>();
      backend.started_us = r[0][2].as<long long>();
      if (!r[0][0].as<bool>()) {
        // Held. A server killed a moment ago still holds it until its
        // backend sees the closed socket and exits, which takes
        // milliseconds: wait for it, up to lock_timeout. A server that is
        // alive keeps it, and the wait fails with 55P03.
        try {
          Count(1);
          Exec(*conn, "SELECT " + GuardLockCall("pg_advisory_lock"));
        } catch (const pqxx::sql_error& e) {
          if (e.sqlstate() != "55P03") throw;
          s = Unavailable(GuardHolder(*conn));
        }
      }
    } catch (const std::exception& e) {
      bool broken = false;
      s = FromException(e, &broken);
    }
    if (deadline_.Disarm()) {
      s = Unavailable("PostgreSQL did not answer within call_timeout_ms=" +
                      std::to_string(options_.call_timeout.count()));
    }
    if (!s.ok()) return Unavailable("cannot open PostgreSQL store: " + s.message());
    conn_ = std::move(conn);
    previous_ = backend;
    return Status::Ok();
  }

  // The call that takes the instance lock, `function` being one of
  // pg_[try_]advisory_lock: its _shared form for a cluster instance.
  std::string GuardLockCall(const std::string& function) const {
    return function + (options_.cluster ? "_shared(" : "(") + std::to_string(kGuardClass) + ", " +
           kGuardKey + ")";
  }

  // Who holds the instance lock, for the message of a refused open.
  std::string GuardHolder(pqxx::connection& conn) {
    std::string holder = "another session";
    size_t holders = 0;
    bool shared = false;  // the holders are cluster instances
    try {
      Count(1);
      pqxx::result r =
          Exec(conn,
               "SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), "
               "'local socket'), l.mode = 'ShareLock' FROM pg_locks l JOIN pg_stat_activity a "
               "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = " +
                   std::to_string(kGuardClass) + " AND l.objid = " + kGuardKey +
                   "::oid AND l.database = (SELECT oid FROM pg_database "
                   "WHERE datname = current_database()) ORDER BY a.pid");
      if (!r.empty()) {
        holder = "PostgreSQL backend " + Text(r[0][0]) + " (application '" + Text(r[0][1]) +
                 "', client " + Text(r[0][2]) + ")";
        holders = r.size();
        shared = r[0][3].as<bool>();
      }
    } catch (const std::exception&) {
      // The refusal stands; only its detail is lost.
    }
    if (holders > 0 && shared && !options_.cluster) {
      return "the database is in use by servers in cluster mode: " + holder +
             (holders > 1 ? " and " + std::to_string(holders - 1) + " more" : std::string()) +
             " hold its instance lock shared; a server not in cluster mode cannot run beside "
             "them (start it in cluster mode, or stop them first)";
    }
    if (holders > 0 && !shared && options_.cluster) {
      return "the database is in use by a server not in cluster mode: " + holder +
             " holds its instance lock; a server in cluster mode cannot run beside it (stop it, "
             "or restart it in cluster mode)";
    }
    return "the database is in use by another server: " + holder +
           " holds its instance lock; run one skiffd per database (or stop the other first)";
  }

  // Forgets the connection; the next call opens a new one.
  void Drop() SKIFF_REQUIRES(mu_) { conn_.reset(); }

  // Runs `body` on the open connection under the call deadline; library
  // exceptions become a Status. Sets *lost when the connection was lost or
  // timed out (and is dropped).
  template <typename Body>
  Status RunLocked(Body&& body, bool* lost = nullptr) SKIFF_REQUIRES(mu_) {
    SKIFF_RETURN_IF_ERROR(EnsureConnected());
    deadline_.Arm(conn_->sock());
    Status s;
    bool broken = false;
    try {
      body(*conn_);
    } catch (const std::exception& e) {
      s = FromException(e, &broken);
    }
    if (deadline_.Disarm() && !s.ok()) {
      broken = true;
      s = Unavailable("PostgreSQL did not answer within call_timeout_ms=" +
                      std::to_string(options_.call_timeout.count()));
    }
    if (!s.ok() && (broken || !conn_->is_open())) {
      broken = true;
      Drop();
    }
    if (lost != nullptr) *lost = broken;
    return s;
  }

  template <typename Body>
  Status Run(Body&& body) {
    MutexLock lock(&mu_);
    return RunLocked(std::forward<Body>(body));
  }

  const std::string url_;  // libpq's, without the store's parameters
  const PostgresOptions options_;
  const std::string instance_;  // this store's row in skiff_commit_marks
  Mutex mu_;
  std::unique_ptr<pqxx::connection> conn_ SKIFF_GUARDED_BY(mu_);
  Backend previous_ SKIFF_GUARDED_BY(mu_);          // of the last connection opened
  bool unreachable_ SKIFF_GUARDED_BY(mu_) = false;  // the last connect got no session
  uint64_t last_mark_ SKIFF_GUARDED_BY(mu_) = 0;    // number of the last write
  internal::SocketDeadline deadline_;               // one call at a time: under mu_
  std::atomic<uint64_t> statements_{0};
  std::atomic<uint64_t> transactions_{0};
};

}  // namespace

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url,
                                                 const PostgresOptions& options) {
  SKIFF_ASSIGN_OR_RETURN(internal::PgUrl parsed, internal::ParsePgUrl(url, options));
  auto store = std::make_unique<PostgresStore>(parsed.libpq_url, parsed.options);
  SKIFF_RETURN_IF_ERROR(store->Connect());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace skiff::store
