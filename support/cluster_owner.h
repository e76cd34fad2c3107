// Who owns a key in a cluster-mode database (docs/cluster.md), read from
// the partition table the instances keep, for tests and benchmarks that
// must aim at (or kill) a particular owner.
// Thread-safe: each call opens its own connection.
#ifndef SKIFF_SUPPORT_CLUSTER_OWNER_H_
#define SKIFF_SUPPORT_CLUSTER_OWNER_H_

#include <cstdint>
#include <string>

#include "base/status.h"

namespace skiff::support {

// The port in the address of the instance that owns (table, key) now; 0
// when the partition has no owner at this moment. `url` is libpq's.
Result<uint16_t> ClusterOwnerPort(const std::string& url, const std::string& table,
                                  const std::string& key);

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_CLUSTER_OWNER_H_
