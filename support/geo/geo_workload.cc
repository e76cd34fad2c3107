#include "support/geo/geo_workload.h"

#include <algorithm>

#include "base/check.h"

namespace skiff::bench::geo {

GeoWorkload::GeoWorkload(size_t points, size_t queries) {
  SquareSampler point_stream(kPointSeed);
  points_.reserve(points);
  for (uint64_t id = 1; id <= points; ++id) points_.push_back(point_stream.Next(id));

  SquareSampler query_stream(kQuerySeed);
  queries_.reserve(queries);
  for (size_t i = 0; i < queries; ++i) {
    const GeoPoint c = query_stream.Next(0);
    queries_.push_back(GeoSearch{c.lat, c.lon, kLimit, kBoxM});
  }

  SquareSampler move_stream(kMoveSeed);
  const uint64_t moved = std::min<uint64_t>(kMovedIds, points);
  for (uint64_t k = 1; k <= kMovedIds * kMovesPerId; ++k) {
    const uint64_t id = (k - 1) % moved + 1;  // k % 100, with 0 read as 100
    pinned_moves_.push_back(move_stream.Next(id));
  }
}

std::vector<GeoPoint> GeoWorkload::PinnedMoves(size_t conn, size_t conns) const {
  std::vector<GeoPoint> mine;
  for (const GeoPoint& m : pinned_moves_) {
    if (m.id % conns == conn % conns) mine.push_back(m);
  }
  return mine;
}

GeoWorkload::MoveStream::MoveStream(size_t conn, size_t conns, size_t points)
    : sampler_(kMoveSeed + 1 + conn), conn_(conn % conns), conns_(conns), points_(points) {
  SKIFF_CHECK(points_ >= conns_);
}

GeoPoint GeoWorkload::MoveStream::Next() {
  // The ids this connection owns: first, first + conns, ... up to points.
  const uint64_t first = conn_ == 0 ? conns_ : conn_;
  const uint64_t count = (points_ - first) / conns_ + 1;
  return sampler_.Next(first + conns_ * sampler_.Below(count));
}

}  // namespace skiff::bench::geo
