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

using internal::OpField;
using internal::PgTextArray;

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
INSERT INTO skiff_meta(name, value) VALUES ('schema_version', '1') ON CONFLICT DO NOTHING;
)sql";
constexpr int kSchemaStatements = 4;  // the statements in kSchema, for the counter

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
    if (batch.size() == 1) {
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
    return Run([&](pqxx::connection& conn) {
      pqxx::work tx(conn);
      Count(1);  // BEGIN
      if (!net.puts.empty()) {
        Count(1);
        tx.exec_prepared("put_many", PgTextArray(net.puts, OpField::kTable),
                         PgTextArray(net.puts, OpField::kKey),
                         PgTextArray(net.puts, OpField::kValue));
      }
      if (!net.deletes.empty()) {
        Count(1);
        tx.exec_prepared("delete_many", PgTextArray(net.deletes, OpField::kTable),
                         PgTextArray(net.deletes, OpField::kKey));
      }
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

 private:
  void Count(uint64_t n) { statements_.fetch_add(n, std::memory_order_relaxed); }

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
