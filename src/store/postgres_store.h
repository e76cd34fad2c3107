// Opening a PostgreSQL store on a Clock of the caller's. store.h's
// OpenPostgresStore reads the system clock; this overload lets a test drive
// the deadlines the store computes (the wait for the server at open, the
// call deadline, the check of a commit's outcome) with a ManualClock.
//
// Thread-safe, like every Store.
#ifndef SKIFF_STORE_POSTGRES_STORE_H_
#define SKIFF_STORE_POSTGRES_STORE_H_

#include <memory>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "store/store.h"

namespace skiff::store {

// As OpenPostgresStore(url, options) in store.h, with deadlines read from
// `clock`, which must outlive the store.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url,
                                                 const PostgresOptions& options,
                                                 const Clock& clock);

}  // namespace skiff::store

#endif  // SKIFF_STORE_POSTGRES_STORE_H_
