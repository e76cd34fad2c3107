// GeoTarget: one system the geo benchmark drives (a peer such as Redis or
// Tarantool, or skiffd), behind the one request shape every target gets:
// insert a point, move a point, and search the nearest points with id and
// distance. The runner (geo_runner.h) opens `connections` GeoConnections and
// drives each from its own thread, one request in flight per connection.
//
// What a target answers differs by design (Redis's box is not a circle,
// PostgreSQL's `point <->` is planar degrees): Semantics() says what to
// expect, and the oracle holds each answer against the same kind of question
// (with or without the box). A difference the target's own tolerance does not
// explain fails the run: that is a client or peer bug, not a difference of
// semantics.
//
// A target and its connections are used from one thread each; ServerCpu()
// and ServerRssBytes() may be called while connections run.
#ifndef SKIFF_SUPPORT_GEO_GEO_TARGET_H_
#define SKIFF_SUPPORT_GEO_GEO_TARGET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "support/geo/geo_oracle.h"
#include "support/geo/geo_workload.h"

namespace skiff::bench::geo {

struct GeoSemantics {
  bool box = false;        // only points inside the query's box come back
  GeoTolerance tolerance;  // what its answers may differ by (each peer says why)
  std::string metric;      // how its distances and order are computed
  std::string durability;  // what an acknowledged write survives
};

class GeoConnection {
 public:
  virtual ~GeoConnection() = default;
  virtual Status Insert(const GeoPoint& p) = 0;
  virtual Status Move(const GeoPoint& p) = 0;
  // Replaces `*out` with the answer, nearest first as the target orders it.
  virtual Status Search(const GeoSearch& q, std::vector<GeoHit>* out) = 0;
};

class GeoTarget {
 public:
  virtual ~GeoTarget() = default;
  virtual std::string name() const = 0;
  virtual GeoSemantics Semantics() const = 0;
  // An empty point set, ready for inserts (restarting a peer, or recreating
  // its table).
  virtual Status Reset() = 0;
  virtual Result<std::unique_ptr<GeoConnection>> Connect() = 0;
  // Points stored, as the target counts them.
  virtual Result<uint64_t> Count() = 0;
  // Bytes the target says its points take (its own accounting: a key's
  // memory usage, index sizes, relation or file size).
  virtual Result<int64_t> StorageBytes() = 0;
  // CPU seconds used so far by whatever answers the requests (the peer's
  // process, or the backends serving this target's connections). For an
  // in-process target, this whole process.
  virtual double ServerCpu() = 0;
  // Resident set in bytes of the one process that answers, when the target
  // has one of its own (a peer or skiffd child process); -1 otherwise (in
  // this process, or one backend per connection).
  virtual int64_t ServerRssBytes() { return -1; }
};

}  // namespace skiff::bench::geo

#endif  // SKIFF_SUPPORT_GEO_GEO_TARGET_H_
