// The geo benchmark's brute-force oracle: the exact great-circle answer to a
// search, and how far a target's answer is from it.
//
// Distances are haversine metres on a sphere of 6,371,008.8 m (the IUGG mean
// radius, the one skiffd's index uses). The box, when a target's query uses
// one, is the latitude/longitude rectangle skiffd's `near` defines: half the
// height north and south along the meridian, half the width east and west
// along the parallel through the centre. Pure functions: thread-safe.
#ifndef SKIFF_SUPPORT_GEO_GEO_ORACLE_H_
#define SKIFF_SUPPORT_GEO_GEO_ORACLE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/geo/geo_workload.h"

namespace skiff::bench::geo {

constexpr double kEarthRadiusM = 6'371'008.8;

struct GeoHit {
  uint64_t id = 0;
  double dist_m = 0;
};

double GreatCircleM(double lat1, double lon1, double lat2, double lon2);
bool InBox(const GeoSearch& q, double lat, double lon);

// The `q.limit` points nearest the centre, nearest first, ties by id; only
// points inside the box when `use_box`. `points[i]` must have id i + 1.
std::vector<GeoHit> BruteForceNearest(const std::vector<GeoPoint>& points, const GeoSearch& q,
                                      bool use_box);

// How far a target's answer may stray from the oracle's and still be right
// by the target's own documented semantics (a metric in degrees, positions
// rounded to geohash cells, another Earth radius). A point may be missing or
// extra only if it lies within edge_m + edge_rel * d of an edge of the
// answer (the distance of its last point, a side of the box); a reported
// distance may be off by dist_m + dist_rel * d. The default is exact.
struct GeoTolerance {
  double edge_m = 1e-6;
  double edge_rel = 0;
  double dist_m = 1e-6;
  double dist_rel = 0;
};

// One answer held against the oracle's (`truth`, for the same question with
// or without the box, `use_box`).
struct AnswerCheck {
  double recall = 1;          // share of the oracle's points the answer has
  double max_dist_err_m = 0;  // largest |reported - true| distance of a point returned
  size_t extra = 0;           // returned points the oracle does not have
  size_t inversions = 0;      // neighbours whose true distances are out of order
  size_t unexplained = 0;     // misses, extras and distances the tolerance does not cover
  std::string problem;        // the first unexplained difference, or a malformed answer
                              // (too many points, unknown or repeated ids)
};

AnswerCheck CheckAnswer(const std::vector<GeoHit>& got, const std::vector<GeoHit>& truth,
                        const std::vector<GeoPoint>& points, const GeoSearch& q, bool use_box,
                        const GeoTolerance& tolerance = {});

// Many checks summed up.
struct CheckSummary {
  size_t answers = 0;
  double min_recall = 1;
  double mean_recall = 1;
  double max_dist_err_m = 0;
  size_t extra = 0;
  size_t inversions = 0;
  size_t unexplained = 0;
  std::string first_problem;

  void Add(const AnswerCheck& c);
};

}  // namespace skiff::bench::geo

#endif  // SKIFF_SUPPORT_GEO_GEO_ORACLE_H_
