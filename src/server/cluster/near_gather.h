// NearGather: one `near` asked of every instance of a cluster, each for the
// partitions it serves, and its answers merged into one (docs/cluster.md,
// "near").
//
// Each instance's geo index follows the writes of the partitions it serves,
// so the instance a client asks cannot answer alone. It sends the query to
// every owner with the set of partitions it believes that owner serves; an
// owner answers `moved` unless it serves every one of them, and otherwise
// answers only from their keys, each share exact among its keys. The shares
// are disjoint and cover every partition, so the `limit` nearest of their
// union, by distance then key, is the exact answer: a share that came back
// `moved` or lost sends the whole query round again instead.
//
// Thread-safe: shares arrive on the links' I/O threads.
#ifndef SKIFF_SERVER_CLUSTER_NEAR_GATHER_H_
#define SKIFF_SERVER_CLUSTER_NEAR_GATHER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "geo/query.h"
#include "server/cluster/partition.h"
#include "server/cluster/peer_links.h"
#include "server/internal/wire/near_reply.h"

namespace skiff::server::cluster {

// The request one owner gets for its share: the client's near, under any
// id, asking for the `columns` form and naming `partitions`. nullopt when
// `request` is not a JSON object.
std::optional<std::string> NearShareRequest(std::string_view request,
                                            const PartitionSet& partitions);

class NearGather {
 public:
  // `shares` answers are awaited; the merged answer keeps `limit` hits,
  // with their documents when `values`.
  NearGather(size_t shares, size_t limit, bool values)
      : waiting_(shares), limit_(limit), values_(values) {}

  // One share's outcome; true when it was the last one awaited.
  bool Add(PeerLinks::Outcome outcome, std::string_view reply) SKIFF_EXCLUDES(mu_);

  // What became of the query, once every share is in.
  enum class Verdict {
    kAnswered,  // Merged() holds the answer
    kRefused,   // an owner refused the query: refusal() is its error reply
    kAgain,     // a share came back `moved`, lost or unreadable: ask again
  };
  Verdict verdict() const SKIFF_EXCLUDES(mu_);
  std::string refusal() const SKIFF_EXCLUDES(mu_);
  // The `limit` nearest of every share's hits, by distance then key, and
  // their documents (when asked for) in the same order.
  void Merged(std::vector<geo::GeoHit>* hits, internal::NearValues* values) SKIFF_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  size_t waiting_ SKIFF_GUARDED_BY(mu_);
  const size_t limit_;
  const bool values_;
  bool again_ SKIFF_GUARDED_BY(mu_) = false;
  std::string refusal_ SKIFF_GUARDED_BY(mu_);
  std::vector<geo::GeoHit> hits_ SKIFF_GUARDED_BY(mu_);
  internal::NearValues docs_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_NEAR_GATHER_H_
