#include "support/test_store.h"

#include <atomic>
#include <cstdio>
#include <random>

#include <pqxx/pqxx>
#include <unistd.h>

#include "support/postgres.h"

namespace skiff::support {
namespace {

// Runs one statement on its own connection; the caller's text is fixed SQL
// plus a schema name made here, never user input.
Status RunAdminStatement(const std::string& url, const std::string& sql) {
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    tx.exec(sql);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Unavailable(std::string("PostgreSQL: ") + e.what());
  }
}

std::string WithSearchPath(const std::string& url, const std::string& schema) {
  // libpq URI parameter `options`, percent-encoded: "-c search_path=SCHEMA".
  const char sep = url.find('?') == std::string::npos ? '?' : '&';
  // application_name lets a test find (and kill) this store's connection.
  return url + sep + "options=-c%20search_path%3D" + schema + "&application_name=" + schema;
}

}  // namespace

Result<std::unique_ptr<TestStore>> TestStore::Open(const std::string& kind) {
  std::unique_ptr<TestStore> t(new TestStore());
  if (kind == "memory") {
    t->url_ = "memory:";
  } else if (kind == "sqlite") {
    t->url_ = "sqlite:" + t->dir_.File("skiff.db");
  } else if (kind == "postgres") {
    Result<PostgresTarget> pg = TestPostgres();
    if (!pg.ok()) return pg.status();
    // pid and a counter are not unique across machines sharing one server
    // (CI containers often have the same small pids): add 64 random bits, and
    // never drop a schema this process did not create.
    static std::atomic<int> next{0};
    std::random_device entropy;
    const uint64_t nonce = (uint64_t{entropy()} << 32) | entropy();
    char suffix[24];
    snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(nonce));
    t->pg_schema_ =
        "skiff_test_" + std::to_string(getpid()) + "_" + std::to_string(next++) + "_" + suffix;
    t->pg_admin_url_ = pg->url;
    SKIFF_RETURN_IF_ERROR(RunAdminStatement(pg->url, "CREATE SCHEMA " + t->pg_schema_));
    t->url_ = WithSearchPath(pg->url, t->pg_schema_);
  } else {
    return BadRequest("unknown store kind '" + kind + "'");
  }
  Result<std::unique_ptr<store::Store>> opened = store::OpenStore(t->url_);
  if (!opened.ok()) return opened.status();
  t->store_ = std::move(*opened);
  return t;
}

TestStore::~TestStore() {
  store_.reset();
  if (!pg_schema_.empty()) {
    (void)RunAdminStatement(pg_admin_url_, "DROP SCHEMA IF EXISTS " + pg_schema_ + " CASCADE");
  }
}

}  // namespace skiff::support
