// The store's own parameters in a PostgreSQL URL: the PostgresOptions
// deadlines (`statement_timeout_ms`, `lock_timeout_ms`, `call_timeout_ms`)
// are taken out of the query string, since libpq refuses parameters it does
// not know, and libpq's `connect_timeout` is added (5 s) when missing, so no
// connection attempt can hang.
//
// Pure function; thread-safe.
#ifndef SKIFF_STORE_INTERNAL_PG_URL_H_
#define SKIFF_STORE_INTERNAL_PG_URL_H_

#include <string>

#include "base/status.h"
#include "store/store.h"

namespace skiff::store::internal {

struct PgUrl {
  std::string libpq_url;    // what libpq is given
  PostgresOptions options;  // the defaults given, with the URL's values applied
};

// bad_request naming the parameter when a value is not a positive number of
// milliseconds.
Result<PgUrl> ParsePgUrl(const std::string& url, const PostgresOptions& defaults);

// A multi-host URI (`postgresql://user@h1:5432,h2:5433/db?...`) with the
// host `host`:`port` moved to the end of its list, so that a reconnect tries
// the others first. libpq tries hosts in order, and a primary that froze
// still accepts TCP connections (its kernel answers) but never completes a
// startup: trying it first would cost a whole connect_timeout before the
// new primary is tried. Anything else (one host, no such host, a
// keyword=value string) comes back unchanged.
std::string WithHostLast(const std::string& url, const std::string& host, const std::string& port);

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_PG_URL_H_
