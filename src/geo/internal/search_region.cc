#include "geo/internal/search_region.h"

#include <algorithm>

namespace skiff::geo::internal {

SearchRegion::SearchRegion(const GeoQuery& query)
    : centre_(UnitVector(query.lat, query.lon)), bounds_(WholeSphere()) {
  if (query.radius_m) {
    // The radius holds the points whose reported distance (rounded to the
    // micrometre) is within it, which PointIndex::Nearest checks last. The
    // chord test only prunes, a metre wide of the radius: a distance
    // computed from a chord is good to well under a micrometre, but only to
    // about 0.1 m next to the antipode.
    radius_m_ = *query.radius_m;
    radius2_ = MetresToChord2(radius_m_ + 1.0);
  }
  reach2_ = radius2_;
  if (query.box_w_m) SetBox(query.lat, query.lon, *query.box_w_m, *query.box_h_m);
}

Box3 SearchRegion::Bounds(double r2) const {
  if (r2 >= 4) return bounds_;
  const double theta = 2 * std::asin(std::sqrt(r2) / 2);
  double lo[3];
  double hi[3];
  const double c[3] = {centre_.get<0>(), centre_.get<1>(), centre_.get<2>()};
  for (int i = 0; i < 3; ++i) {
    // The angle between a cap point and axis i lies within theta of the
    // centre's angle to that axis.
    const double alpha = std::acos(std::clamp(c[i], -1.0, 1.0));
    hi[i] = std::cos(std::max(0.0, alpha - theta)) + kSlack;
    lo[i] = std::cos(std::min(kPi, alpha + theta)) - kSlack;
  }
  return Intersection(bounds_, Box3(Vec3(lo[0], lo[1], lo[2]), Vec3(hi[0], hi[1], hi[2])));
}

void SearchRegion::SetBox(double lat, double lon, double width_m, double height_m) {
  has_box_ = true;
  const double phi = lat * kRadiansPerDegree;
  const double half_height = (height_m / 2) / kEarthRadiusM;
  const double south = std::max(-kPi / 2, phi - half_height);
  const double north = std::min(kPi / 2, phi + half_height);
  zlo_ = south <= -kPi / 2 ? -1 : std::sin(south);
  zhi_ = north >= kPi / 2 ? 1 : std::sin(north);
  // Half the width along the centre's parallel, as an angle of longitude.
  const double parallel = kEarthRadiusM * std::cos(phi);
  const double half_width_m = width_m / 2;
  all_longitudes_ = lat == 90 || lat == -90 || half_width_m >= parallel * kPi;
  const double half_width = all_longitudes_ ? kPi : half_width_m / parallel;
  const double lambda = lon * kRadiansPerDegree;
  cos_lon_ = std::cos(lambda);
  sin_lon_ = std::sin(lambda);
  cos_half_width_ = std::cos(half_width);

  // Bounds: z from the latitudes; x = rho cos(lambda), y = rho sin(lambda)
  // with rho = cos(latitude) >= 0 over the longitudes spanned.
  const double rho_lo = std::max(0.0, std::min(std::cos(south), std::cos(north)));
  const double rho_hi = south <= 0 && north >= 0 ? 1 : std::max(std::cos(south), std::cos(north));
  double cos_lo = -1, cos_hi = 1, sin_lo = -1, sin_hi = 1;
  if (!all_longitudes_) {
    const double west = lambda - half_width;
    const double east = lambda + half_width;
    auto spans = [&](double angle) {
      return std::abs(std::remainder(angle - lambda, 2 * kPi)) <= half_width;
    };
    cos_lo = spans(kPi) ? -1 : std::min(std::cos(west), std::cos(east));
    cos_hi = spans(0) ? 1 : std::max(std::cos(west), std::cos(east));
    sin_lo = spans(-kPi / 2) ? -1 : std::min(std::sin(west), std::sin(east));
    sin_hi = spans(kPi / 2) ? 1 : std::max(std::sin(west), std::sin(east));
  }
  auto low = [&](double t) { return (t >= 0 ? rho_lo : rho_hi) * t - kSlack; };
  auto high = [&](double t) { return (t >= 0 ? rho_hi : rho_lo) * t + kSlack; };
  bounds_ = Box3(Vec3(low(cos_lo), low(sin_lo), zlo_ - kSlack),
                 Vec3(high(cos_hi), high(sin_hi), zhi_ + kSlack));
  // The farthest corner of the bounds is at least as far as any point.
  double far2 = 0;
  for (int corner = 0; corner < 8; ++corner) {
    const Vec3& x = corner & 1 ? bounds_.max_corner() : bounds_.min_corner();
    const Vec3& y = corner & 2 ? bounds_.max_corner() : bounds_.min_corner();
    const Vec3& z = corner & 4 ? bounds_.max_corner() : bounds_.min_corner();
    far2 = std::max(far2, Chord2(Vec3(x.get<0>(), y.get<1>(), z.get<2>()), centre_));
  }
  reach2_ = std::min(reach2_, far2);
}

}  // namespace skiff::geo::internal
