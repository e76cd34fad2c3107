// Test-side helpers for stores: opening a TestStore inside a gtest, failing
// under CI and skipping loudly elsewhere when PostgreSQL cannot be had.
#ifndef SKIFF_TEST_STORE_STORE_TEST_UTIL_H_
#define SKIFF_TEST_STORE_STORE_TEST_UTIL_H_

#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "support/postgres.h"
#include "support/test_store.h"

#include "test/status_matchers.h"

namespace skiff::test {

// Opens a TestStore of `kind` into *out. When it cannot be opened, *out stays
// empty and a failure (or, for PostgreSQL outside CI, a loud skip) is recorded;
// call it from SetUp so the test body does not run.
inline void OpenOrSkip(const std::string& kind, std::unique_ptr<support::TestStore>* out) {
  auto opened = support::TestStore::Open(kind);
  if (opened.ok()) {
    *out = std::move(*opened);
    return;
  }
  // Missing PostgreSQL is a loud skip, except under CI or when the caller
  // named a server in SKIFF_TEST_POSTGRES_URL: then it is a failure.
  if (support::MaySkipMissingStore(kind, opened.status())) {
    GTEST_SKIP() << "*** PostgreSQL not available, PostgreSQL cases NOT run: "
                 << opened.status().ToString();
  }
  FAIL() << "cannot open the " << kind << " store: " << opened.status().ToString();
}

// Ends the PostgreSQL backends of every store opened on `fixture`'s schema
// (found by their application_name), as a network cut or a restarted server
// would. Returns how many were ended.
inline int KillStoreBackends(const support::TestStore& fixture) {
  pqxx::connection admin(fixture.pg_admin_url());
  pqxx::nontransaction tx(admin);
  pqxx::result r = tx.exec_params(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
      "WHERE application_name = $1",
      fixture.pg_schema());
  return r[0][0].as<int>();
}

}  // namespace skiff::test

#endif  // SKIFF_TEST_STORE_STORE_TEST_UTIL_H_
