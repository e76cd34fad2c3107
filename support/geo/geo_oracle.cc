#include "support/geo/geo_oracle.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace skiff::bench::geo {
namespace {

constexpr double kPi = 3.14159265358979323846;

double Radians(double degrees) { return degrees * (kPi / 180); }

}  // namespace

double GreatCircleM(double lat1, double lon1, double lat2, double lon2) {
  const double sin_dlat = std::sin(Radians(lat2 - lat1) / 2);
  const double sin_dlon = std::sin(Radians(lon2 - lon1) / 2);
  const double a =
      sin_dlat * sin_dlat + std::cos(Radians(lat1)) * std::cos(Radians(lat2)) * sin_dlon * sin_dlon;
  return 2 * kEarthRadiusM * std::asin(std::min(1.0, std::sqrt(a)));
}

bool InBox(const GeoSearch& q, double lat, double lon) {
  const double half_lat = (q.box_m / 2) / kEarthRadiusM * 180 / kPi;
  if (lat < q.lat - half_lat || lat > q.lat + half_lat) return false;
  const double parallel = kEarthRadiusM * std::cos(Radians(q.lat));
  if (q.box_m / 2 >= parallel * kPi) return true;
  const double half_lon = (q.box_m / 2) / parallel * 180 / kPi;
  return std::abs(std::remainder(lon - q.lon, 360.0)) <= half_lon;
}

std::vector<GeoHit> BruteForceNearest(const std::vector<GeoPoint>& points, const GeoSearch& q,
                                      bool use_box) {
  std::vector<GeoHit> all;
  all.reserve(points.size());
  for (const GeoPoint& p : points) {
    if (use_box && !InBox(q, p.lat, p.lon)) continue;
    all.push_back({p.id, GreatCircleM(q.lat, q.lon, p.lat, p.lon)});
  }
  auto nearer = [](const GeoHit& a, const GeoHit& b) {
    return a.dist_m != b.dist_m ? a.dist_m < b.dist_m : a.id < b.id;
  };
  const size_t n = std::min(q.limit, all.size());
  std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(n), all.end(), nearer);
  all.resize(n);
  return all;
}

namespace {

// How far inside the box `p` lies, in metres (negative: outside), measured
// the way InBox measures: along the meridian and along the centre's parallel.
double BoxMargin(const GeoSearch& q, const GeoPoint& p) {
  const double lat_m = std::abs(Radians(p.lat - q.lat)) * kEarthRadiusM;
  const double lon_m = std::abs(Radians(std::remainder(p.lon - q.lon, 360.0))) * kEarthRadiusM *
                       std::cos(Radians(q.lat));
  return std::min(q.box_m / 2 - lat_m, q.box_m / 2 - lon_m);
}

}  // namespace

AnswerCheck CheckAnswer(const std::vector<GeoHit>& got, const std::vector<GeoHit>& truth,
                        const std::vector<GeoPoint>& points, const GeoSearch& q, bool use_box,
                        const GeoTolerance& tolerance) {
  AnswerCheck c;
  auto flag = [&](const std::string& what) {
    ++c.unexplained;
    if (c.problem.empty()) c.problem = what;
  };
  if (got.size() > q.limit) {
    flag(std::to_string(got.size()) + " points for a limit of " + std::to_string(q.limit));
  }
  // Where the oracle's answer ends: the limit's distance, when the limit
  // (not the region) cut it.
  const bool cut_by_limit = truth.size() == q.limit && !truth.empty();
  const double cut = cut_by_limit ? truth.back().dist_m : 0;
  auto edge = [&](double d) { return tolerance.edge_m + tolerance.edge_rel * d; };
  auto near_an_edge = [&](const GeoPoint& p, double d) {
    if (cut_by_limit && std::abs(d - cut) <= edge(cut)) return true;
    return use_box && std::abs(BoxMargin(q, p)) <= edge(d);
  };

  std::unordered_set<uint64_t> want;
  for (const GeoHit& h : truth) want.insert(h.id);
  std::unordered_set<uint64_t> seen;
  size_t hits = 0;
  double previous = -1;
  for (const GeoHit& h : got) {
    if (h.id == 0 || h.id > points.size()) {
      flag("unknown id " + std::to_string(h.id));
      continue;
    }
    if (!seen.insert(h.id).second) {
      flag("id " + std::to_string(h.id) + " twice");
      continue;
    }
    const GeoPoint& p = points[h.id - 1];
    const double d = GreatCircleM(q.lat, q.lon, p.lat, p.lon);
    const double err = std::abs(h.dist_m - d);
    c.max_dist_err_m = std::max(c.max_dist_err_m, err);
    if (err > tolerance.dist_m + tolerance.dist_rel * d) {
      flag("id " + std::to_string(h.id) + " reported at " + std::to_string(h.dist_m) +
           " m, is at " + std::to_string(d) + " m");
    }
    if (d < previous) ++c.inversions;
    previous = d;
    if (want.count(h.id) > 0) {
      ++hits;
    } else {
      ++c.extra;
      if (!(cut_by_limit && d <= cut + edge(cut)) && !near_an_edge(p, d)) {
        flag("id " + std::to_string(h.id) + " at " + std::to_string(d) + " m should not be there");
      }
    }
  }
  for (const GeoHit& t : truth) {
    if (seen.count(t.id) > 0) continue;
    if (!near_an_edge(points[t.id - 1], t.dist_m)) {
      flag("id " + std::to_string(t.id) + " at " + std::to_string(t.dist_m) + " m is missing");
    }
  }
  c.recall = truth.empty() ? 1 : double(hits) / double(truth.size());
  return c;
}

void CheckSummary::Add(const AnswerCheck& c) {
  mean_recall = (mean_recall * double(answers) + c.recall) / double(answers + 1);
  ++answers;
  min_recall = std::min(min_recall, c.recall);
  max_dist_err_m = std::max(max_dist_err_m, c.max_dist_err_m);
  extra += c.extra;
  inversions += c.inversions;
  unexplained += c.unexplained;
  if (first_problem.empty()) first_problem = c.problem;
}

}  // namespace skiff::bench::geo
