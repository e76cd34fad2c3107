// The brute-force oracle the geo index tests hold GeoIndex to (haversine on
// latitude/longitude, written apart from the index, which works on unit
// vectors), random points and keys, and the small pieces both test files
// share. Test-only; thread-compatible.
#ifndef SKIFF_TEST_GEO_GEO_INDEX_ORACLE_H_
#define SKIFF_TEST_GEO_GEO_INDEX_ORACLE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "geo/geo_index.h"

#include "test/status_matchers.h"

namespace skiff::geo {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kR = kEarthRadiusM;

inline double Radians(double degrees) { return degrees * kPi / 180; }

// The oracle: haversine on latitude/longitude in degrees, written apart from
// the index (which works on unit vectors). A pole is one point.
inline double Haversine(double lat1, double lon1, double lat2, double lon2) {
  if (std::abs(lat1) == 90) lon1 = 0;
  if (std::abs(lat2) == 90) lon2 = 0;
  const double p1 = Radians(lat1), p2 = Radians(lat2);
  const double dp = Radians(lat2 - lat1), dl = Radians(lon2 - lon1);
  const double a = std::sin(dp / 2) * std::sin(dp / 2) +
                   std::cos(p1) * std::cos(p2) * std::sin(dl / 2) * std::sin(dl / 2);
  return 2 * kR * std::asin(std::min(1.0, std::sqrt(a)));
}

// The box as geo/query.h defines it, in degrees.
inline bool InBox(const GeoQuery& q, double lat, double lon) {
  const double half_lat = (*q.box_h_m / 2) / kR * 180 / kPi;
  if (lat < std::max(-90.0, q.lat - half_lat) || lat > std::min(90.0, q.lat + half_lat)) {
    return false;
  }
  if (std::abs(q.lat) == 90 || std::abs(lat) == 90) return true;
  const double parallel = kR * std::cos(Radians(q.lat));
  if (*q.box_w_m / 2 >= parallel * kPi) return true;
  const double half_lon = (*q.box_w_m / 2) / parallel * 180 / kPi;
  return std::abs(std::remainder(lon - q.lon, 360.0)) <= half_lon;
}

inline GeoQuery At(double lat, double lon, size_t limit) {
  GeoQuery q;
  q.lat = lat;
  q.lon = lon;
  q.limit = limit;
  return q;
}

// A packing policy with its hooks (RepackPolicy).
inline RepackPolicy Packing(size_t min_changes, std::function<void()> before_copy = {},
                            std::function<void()> after_copy = {}) {
  RepackPolicy policy;
  policy.min_changes = min_changes;
  policy.before_copy = std::move(before_copy);
  policy.after_copy = std::move(after_copy);
  return policy;
}

struct Point {
  double lat, lon;
};
using Points = std::map<std::string, Point>;

inline std::vector<GeoHit> BruteForce(const Points& points, const GeoQuery& q) {
  std::vector<GeoHit> all;
  for (const auto& [key, p] : points) {
    const int64_t um = std::llround(Haversine(q.lat, q.lon, p.lat, p.lon) * 1e6);
    // The radius holds what is reported within it (whole micrometres).
    if (q.radius_m && double(um) / 1e6 > *q.radius_m) continue;
    if (q.box_w_m && !InBox(q, p.lat, p.lon)) continue;
    all.push_back({key, um});
  }
  std::sort(all.begin(), all.end(), [](const GeoHit& a, const GeoHit& b) {
    return a.dist_um != b.dist_um ? a.dist_um < b.dist_um : a.key < b.key;
  });
  if (all.size() > q.limit) all.resize(q.limit);
  return all;
}

// Haversine and the vectors agree to well under a micrometre below
// 10,000 km, so after rounding to whole micrometres the two may differ by
// one; beyond, both lose precision towards the antipode (to about 0.1 m).
inline int64_t ToleranceUm(double d) { return d < 1e7 ? 1 : 500'000; }

inline ::testing::AssertionResult SameAnswer(const std::vector<GeoHit>& got,
                                             const std::vector<GeoHit>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " hits, oracle has " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].key != want[i].key ||
        std::abs(got[i].dist_um - want[i].dist_um) > ToleranceUm(want[i].dist_m())) {
      return ::testing::AssertionFailure()
             << "hit " << i << ": " << got[i].key << " at " << got[i].dist_m() << " m, oracle "
             << want[i].key << " at " << want[i].dist_m() << " m";
    }
  }
  return ::testing::AssertionSuccess();
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}
  double Uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  // Uniform on the sphere.
  Point Anywhere() { return {std::asin(Uniform(-1, 1)) * 180 / kPi, Uniform(-180, 180)}; }
  Point NearPole() {
    const double lat = Uniform(89, 90);
    return {Below(2) == 0 ? lat : -lat, Uniform(-180, 180)};
  }
  Point NearAntimeridian() {
    const double lon = Uniform(179, 180);
    return {Uniform(-60, 60), Below(2) == 0 ? lon : -lon};
  }
  Point Mixed() {
    switch (Below(4)) {
      case 0:
        return NearPole();
      case 1:
        return NearAntimeridian();
      default:
        return Anywhere();
    }
  }
  // Keys with bytes above 0x7f too, so bytewise order is exercised.
  std::string Key() {
    static const char* const kParts[] = {"a", "b", "z",       "\xc3\xa9",
                                         "0", "~", "device-", "\xe2\x82\xac"};
    std::string key;
    const size_t n = 1 + Below(4);
    for (size_t i = 0; i < n; ++i) key += kParts[Below(8)];
    return key + std::to_string(next_++);
  }

 private:
  std::mt19937_64 rng_;
  uint64_t next_ = 0;
};

// Asks one cheap query, as a client between writes would.
inline void Touch(GeoIndex& index) {
  std::vector<GeoHit> got;
  ASSERT_OK(index.Nearest(At(0, 0, 1), &got));
}

}  // namespace skiff::geo

#endif  // SKIFF_TEST_GEO_GEO_INDEX_ORACLE_H_
