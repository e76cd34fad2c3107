#include "geo/query.h"

#include <cmath>

namespace skiff::geo {

Status CheckPosition(double lat, double lon) {
  if (!std::isfinite(lat) || lat < -90 || lat > 90) {
    return BadRequest("lat must be a number from -90 to 90");
  }
  if (!std::isfinite(lon) || lon < -180 || lon > 180) {
    return BadRequest("lon must be a number from -180 to 180");
  }
  return Status::Ok();
}

Status CheckQuery(const GeoQuery& query) {
  SKIFF_RETURN_IF_ERROR(CheckPosition(query.lat, query.lon));
  if (query.limit < 1 || query.limit > kMaxLimit) {
    return BadRequest("limit must be from 1 to " + std::to_string(kMaxLimit));
  }
  auto positive = [](double m) { return std::isfinite(m) && m > 0; };
  if (query.radius_m && !positive(*query.radius_m)) {
    return BadRequest("radius_m must be a positive number of metres");
  }
  if (query.box_w_m.has_value() != query.box_h_m.has_value()) {
    return BadRequest("box_m needs a width and a height");
  }
  if (query.box_w_m && !(positive(*query.box_w_m) && positive(*query.box_h_m))) {
    return BadRequest("box_m sides must be positive numbers of metres");
  }
  return Status::Ok();
}

}  // namespace skiff::geo
