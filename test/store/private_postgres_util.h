// Opening a PrivatePostgres inside a gtest: a failure under CI, a loud skip
// elsewhere when the machine cannot run one (no PostgreSQL binaries).
#ifndef SKIFF_TEST_STORE_PRIVATE_POSTGRES_UTIL_H_
#define SKIFF_TEST_STORE_PRIVATE_POSTGRES_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/postgres.h"
#include "support/private_postgres.h"

namespace skiff::test {

// Call from SetUp; *out stays empty when no cluster could be started.
inline void StartPrivatePostgresOrSkip(std::unique_ptr<support::PrivatePostgres>* out,
                                       const std::vector<std::string>& settings = {}) {
  auto started = support::PrivatePostgres::Start(settings);
  if (started.ok()) {
    *out = std::move(*started);
    return;
  }
  if (!support::InCi()) {
    GTEST_SKIP() << "*** no private PostgreSQL cluster, these fault cases NOT run: "
                 << started.status().ToString();
  }
  FAIL() << "cannot start a private PostgreSQL cluster: " << started.status().ToString();
}

}  // namespace skiff::test

#endif  // SKIFF_TEST_STORE_PRIVATE_POSTGRES_UTIL_H_
