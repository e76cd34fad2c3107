// SearchRegion: the points a GeoQuery may return (geo/query.h), as exact
// tests on unit vectors (within the radius, inside the latitude/longitude
// box), and 3-D boxes bounding them for the R-tree to prune with.
//
// Contains() is inline: the search runs it on every candidate point.
// Immutable after construction; thread-safe.
#ifndef SKIFF_GEO_INTERNAL_SEARCH_REGION_H_
#define SKIFF_GEO_INTERNAL_SEARCH_REGION_H_

#include <cmath>

#include "geo/internal/sphere.h"
#include "geo/query.h"

namespace skiff::geo::internal {

class SearchRegion {
 public:
  // `query` must pass CheckQuery.
  explicit SearchRegion(const GeoQuery& query);

  const Vec3& centre() const { return centre_; }
  double radius_m() const { return radius_m_; }
  // No point of the region is farther from the centre (squared chord;
  // kInf when the region is not bounded).
  double reach2() const { return reach2_; }

  // Whether `p`, at squared chord `d2` from the centre, is in the region.
  bool Contains(const Vec3& p, double d2) const {
    if (d2 > radius2_) return false;
    if (!has_box_) return true;
    const double z = p.get<2>();
    if (z < zlo_ || z > zhi_) return false;
    if (all_longitudes_) return true;
    // Within half_width of the centre's longitude: the angle between the
    // point's horizontal direction and the centre's has cosine >= cos(half).
    // A pole (x = y = 0) passes, as it should: it lies on every meridian.
    const double x = p.get<0>();
    const double y = p.get<1>();
    return x * cos_lon_ + y * sin_lon_ >= std::sqrt(x * x + y * y) * cos_half_width_;
  }

  // A 3-D box holding every region point within squared chord `r2` of the
  // centre: the bounds of that spherical cap, cut by the box's bounds.
  Box3 Bounds(double r2) const;

 private:
  void SetBox(double lat, double lon, double width_m, double height_m);

  Vec3 centre_;
  Box3 bounds_;
  double radius_m_ = kInf;
  double radius2_ = kInf;
  double reach2_ = kInf;
  bool has_box_ = false;
  bool all_longitudes_ = true;
  double zlo_ = -1;
  double zhi_ = 1;
  double cos_lon_ = 1;
  double sin_lon_ = 0;
  double cos_half_width_ = -1;
};

}  // namespace skiff::geo::internal

#endif  // SKIFF_GEO_INTERNAL_SEARCH_REGION_H_
