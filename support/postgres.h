// Where tests and benchmarks get their real PostgreSQL.
//
// SKIFF_TEST_POSTGRES_URL wins when set. Otherwise tools/pg-up is run once per
// process: it starts (or reuses) a throwaway cluster, through Docker Compose
// when an engine answers, else from the machine's PostgreSQL binaries, and
// prints its URL. When neither works the reason is returned; callers fail
// under CI=true and skip loudly elsewhere, never silently.
//
// Thread-safe (the lookup runs once).
#ifndef SKIFF_SUPPORT_POSTGRES_H_
#define SKIFF_SUPPORT_POSTGRES_H_

#include <string>

#include "base/status.h"

namespace skiff::support {

struct PostgresTarget {
  std::string url;
  std::string source;  // "SKIFF_TEST_POSTGRES_URL" or "tools/pg-up"
};

Result<PostgresTarget> TestPostgres();

// True when the environment says this is a CI run (CI=true or CI=1).
bool InCi();

// The one rule tests and benchmarks share for a store that could not be
// opened: it may be skipped (loudly) only when it is PostgreSQL, it was
// unavailable, this is not CI and nobody named a server in
// SKIFF_TEST_POSTGRES_URL. Anything else is a failure.
bool MaySkipMissingStore(const std::string& kind, const Status& why);

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_POSTGRES_H_
