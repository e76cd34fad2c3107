// GeoQuery and GeoHit: a `near` query and one point of its answer, as the
// wire protocol carries them (docs/protocol.md), with the checks every query
// and position passes before it reaches an index.
//
// Distances are great-circle distances on a sphere of radius kEarthRadiusM
// (the IUGG mean radius), reported in whole micrometres: the sphere itself is
// up to 0.5% off the Earth, so finer digits would say nothing, and a fixed
// resolution is far cheaper to write as text than shortest round-trip
// doubles (geo/distance_text.h). Plain values and pure functions;
// thread-safe.
#ifndef SKIFF_GEO_QUERY_H_
#define SKIFF_GEO_QUERY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace skiff::geo {

inline constexpr double kEarthRadiusM = 6'371'008.8;
// The most points one query may ask for.
inline constexpr size_t kMaxLimit = 10'000;

// The `limit` nearest points to (lat, lon), optionally only those within
// `radius_m` of it and/or inside a box. The box is a latitude / longitude
// rectangle centred on the query point: it spans box_h/2 metres north and
// south along the meridian (clamped at the poles) and box_w/2 metres east
// and west along the parallel through the centre, wrapping across +-180
// degrees; when box_w/2 reaches half the length of that parallel it spans
// every longitude. (Redis's GEOSEARCH BYBOX measures the east-west
// half-width at each candidate's latitude instead; the two agree to well
// under a millimetre for boxes of a few kilometres away from the poles.)
struct GeoQuery {
  double lat = 0;
  double lon = 0;
  size_t limit = 100;
  std::optional<double> radius_m;
  std::optional<double> box_w_m;  // box_w_m and box_h_m are given together
  std::optional<double> box_h_m;
};

// Which keys a query may answer, or a replacement covers: a caller's subset
// of an index (in cluster mode, the partitions an instance answers for).
using KeyFilter = std::function<bool(std::string_view key)>;

struct GeoHit {
  std::string key;
  int64_t dist_um = 0;  // great-circle distance, rounded to the micrometre
  double dist_m() const { return double(dist_um) / 1e6; }
};

// bad_request unless lat is in [-90, 90] and lon in [-180, 180] (finite).
Status CheckPosition(double lat, double lon);

// bad_request for a query CheckPosition refuses, a limit outside
// [1, kMaxLimit], or a radius or box side that is not a positive number.
// The messages name the fields as the protocol does.
Status CheckQuery(const GeoQuery& query);

}  // namespace skiff::geo

#endif  // SKIFF_GEO_QUERY_H_
