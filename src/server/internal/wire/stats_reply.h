// The reply of `stats` (docs/protocol.md, "stats"): the figures the request
// handler gathers from the documents, the committer, the sync engine and the
// listener, and those of a handler wrapped around it (the cluster router's),
// written in the protocol's member order. Callers fill in numbers; only this
// encoder knows the members' names and nesting.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_STATS_REPLY_H_
#define SKIFF_SERVER_INTERNAL_WIRE_STATS_REPLY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/internal/committer.h"
#include "server/internal/document_cache.h"
#include "server/internal/geo_indexes.h"
#include "server/internal/listener.h"
#include "server/internal/watch_hub.h"
#include "sync/sync_engine.h"

namespace skiff::server::internal {

// Cluster mode's figures (docs/cluster.md): this instance and what it serves.
struct ClusterStats {
  uint64_t instance = 0;
  uint64_t partitions_served = 0;
  uint64_t requests_relayed = 0;  // requests sent on to another instance
};

// The per-user and per-address limits (docs/deploy.md "Limits").
struct LimitStats {
  uint64_t refused_user_rate = 0;         // requests over a user's rate
  uint64_t refused_user_connections = 0;  // logins over a user's sessions
  uint64_t refused_failed_logins = 0;     // logins from a blocked address
  uint64_t failed_logins = 0;             // wrong user or secret, since start
  uint64_t addresses_tracked = 0;         // now, in the failed-login table
};

struct StatsFigures {
  TierStats tiers;
  CommitterCounters commits;
  ListenerStats network;
  size_t sessions = 0;
  std::string_view durability;
  std::string_view store;
  uint64_t store_statements = 0;
  uint64_t sync_cursor = 0;
  sync::SyncCounters sync;
  // Bootstrap read-ahead (bootstrap_read_ahead.h).
  uint64_t pages_read_ahead = 0;
  uint64_t pages_from_read_ahead = 0;
  uint64_t read_ahead_refused = 0;
  uint64_t read_ahead_bytes = 0;
  std::vector<GeoTableStats> geo;
  // Set when a per-user or per-address limit is on: the reply then has a
  // `limits` member.
  std::optional<LimitStats> limits;
  // Watches (watch_hub.h); reported once one was opened since start.
  std::optional<WatchStats> watch;
  // Set in cluster mode only: the reply then has a `cluster` member.
  std::optional<ClusterStats> cluster;
};

std::string EncodeStatsReply(uint64_t id, const StatsFigures& figures);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_STATS_REPLY_H_
