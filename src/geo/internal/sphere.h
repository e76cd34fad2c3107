// Sphere maths for the geo index: positions as 3-D unit vectors, and the
// conversions between straight-line (chord) distance and great-circle
// distance on a sphere of radius kEarthRadiusM (geo/query.h).
//
// Nearness between unit vectors is chord distance, which orders points
// exactly as great-circle distance does, with no special case at the poles
// or at +-180 degrees; the R-tree (point_index.h) indexes the vectors. The
// functions are inline: the search calls them once per candidate point.
// Pure functions; thread-safe.
#ifndef SKIFF_GEO_INTERNAL_SPHERE_H_
#define SKIFF_GEO_INTERNAL_SPHERE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <boost/geometry/core/cs.hpp>
#include <boost/geometry/geometries/box.hpp>
#include <boost/geometry/geometries/point.hpp>

#include "geo/query.h"

namespace skiff::geo::internal {

using Vec3 = boost::geometry::model::point<double, 3, boost::geometry::cs::cartesian>;
using Box3 = boost::geometry::model::box<Vec3>;

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kRadiansPerDegree = kPi / 180;
inline constexpr double kInf = std::numeric_limits<double>::infinity();
// Added around every computed bounding box: unit-vector coordinates carry
// errors near 1e-16, so rounding in a bound can never drop a point that the
// exact tests accept.
inline constexpr double kSlack = 1e-12;

// The unit vector of a position in degrees (CheckPosition accepts it).
inline Vec3 UnitVector(double lat, double lon) {
  // Each pole is one point, whatever longitude it was given with.
  if (lat == 90 || lat == -90) return Vec3(0, 0, lat > 0 ? 1 : -1);
  const double phi = lat * kRadiansPerDegree;
  const double lambda = lon * kRadiansPerDegree;
  const double c = std::cos(phi);
  return Vec3(c * std::cos(lambda), c * std::sin(lambda), std::sin(phi));
}

// The squared chord between two vectors.
inline double Chord2(const Vec3& a, const Vec3& b) {
  const double dx = a.get<0>() - b.get<0>();
  const double dy = a.get<1>() - b.get<1>();
  const double dz = a.get<2>() - b.get<2>();
  return dx * dx + dy * dy + dz * dz;
}

// Great-circle metres of a squared chord: 2R asin(chord / 2). Below
// chord/2 = 1e-3 (about 12.7 km) three terms of the asin series are exact to
// double precision and cost a fraction of asin. The result is accurate to
// well under a micrometre at short range and to about 0.1 m next to the
// antipode, where any formula from coordinates is ill-conditioned.
inline double ChordToMetres(double d2) {
  const double x = std::sqrt(d2) / 2;
  if (x < 1e-3) {
    const double x2 = x * x;
    return 2 * kEarthRadiusM * x * (1 + x2 * (1.0 / 6 + x2 * (3.0 / 40)));
  }
  return 2 * kEarthRadiusM * std::asin(std::min(1.0, x));
}

// Whole micrometres of a squared chord, rounded to nearest. Never more than
// half the circumference, about 2.0e13 (asin's argument is clamped, so an
// infinite chord gives that too), which an int64 holds.
inline int64_t ChordToMicrometres(double d2) { return int64_t(ChordToMetres(d2) * 1e6 + 0.5); }

// The squared chord of a great-circle distance; kInf when it spans the sphere.
inline double MetresToChord2(double metres) {
  const double theta = metres / kEarthRadiusM;
  if (theta >= kPi) return kInf;
  const double chord = 2 * std::sin(theta / 2);
  return chord * chord;
}

// A box around the whole sphere, with slack.
inline Box3 WholeSphere() {
  const double e = 1 + kSlack;
  return Box3(Vec3(-e, -e, -e), Vec3(e, e, e));
}

// The intersection of two boxes. An empty one comes out with min > max,
// which no point is in.
inline Box3 Intersection(const Box3& a, const Box3& b) {
  const Vec3& al = a.min_corner();
  const Vec3& ah = a.max_corner();
  const Vec3& bl = b.min_corner();
  const Vec3& bh = b.max_corner();
  return Box3(Vec3(std::max(al.get<0>(), bl.get<0>()), std::max(al.get<1>(), bl.get<1>()),
                   std::max(al.get<2>(), bl.get<2>())),
              Vec3(std::min(ah.get<0>(), bh.get<0>()), std::min(ah.get<1>(), bh.get<1>()),
                   std::min(ah.get<2>(), bh.get<2>())));
}

}  // namespace skiff::geo::internal

#endif  // SKIFF_GEO_INTERNAL_SPHERE_H_
