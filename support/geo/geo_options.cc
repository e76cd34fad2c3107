#include "support/geo/geo_options.h"

#include "support/bench_options.h"
#include "support/geo/geo_workload.h"
#include "support/suite_options.h"

namespace skiff::bench::geo {

size_t GeoOptions::Points() const {
  return points > 0 ? points : ByProfile<size_t>(20'000, kPinnedPoints, kPinnedPoints);
}

std::chrono::nanoseconds GeoOptions::SearchBudget() const {
  const double s = search_seconds > 0 ? search_seconds : ByProfile(3.0, 20.0, 50.0);
  return std::chrono::nanoseconds(int64_t(s * 1e9));
}

std::chrono::nanoseconds GeoOptions::MoveBudget() const {
  const double s = move_seconds > 0 ? move_seconds : ByProfile(2.0, 10.0, 30.0);
  return std::chrono::nanoseconds(int64_t(s * 1e9));
}

size_t GeoOptions::Check() const { return check > 0 ? check : ByProfile<size_t>(20, 100, 200); }

GeoOptions GetGeoOptions() {
  const SuiteOptions& suite = GetSuiteOptions();
  GeoOptions o;
  o.points = size_t(suite.geo_points);
  o.search_seconds = suite.geo_search_seconds;
  o.move_seconds = suite.geo_move_seconds;
  o.check = size_t(suite.geo_check);
  o.connections = size_t(suite.geo_connections);
  o.targets.insert(suite.geo_targets.begin(), suite.geo_targets.end());
  o.near_columns = suite.geo_near_form == "columns";
  return o;
}

}  // namespace skiff::bench::geo
