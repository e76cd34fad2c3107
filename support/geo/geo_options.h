// Options of the geo family (bench/geo_bench.cc), read from the suite's one
// options table (support/suite_options.h). Defaults follow the profile:
//
//                           quick    standard   full
//   --geo-points=N          20,000   100,000    100,000   points inserted
//   --geo-search-seconds=S  3        20         50        search budget (cap
//                                                         200,000 queries)
//   --geo-move-seconds=S    2        10         30        sustained moves
//   --geo-check=N           20       100        200       queries held against
//                                                         the oracle per check
//   --geo-connections=N     16 (the page's 16 client threads)
//   --geo-targets=a,b       all: redis, tarantool, postgres-point, postgis,
//                           sqlite-rtree (and the in-process index cases,
//                           `index`)
//   --geo-near-form=F       columns: skiffd answers `near` as parallel arrays;
//                           items: one object per item
//
// The full profile is the page's budget (up to 200,000 queries or 50 s).
// A value type, made from the options the suite's main parsed: safe from any
// thread.
#ifndef SKIFF_SUPPORT_GEO_GEO_OPTIONS_H_
#define SKIFF_SUPPORT_GEO_GEO_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <set>
#include <string>

namespace skiff::bench::geo {

struct GeoOptions {
  size_t points = 0;          // 0: by profile
  double search_seconds = 0;  // 0: by profile
  double move_seconds = 0;    // 0: by profile
  size_t check = 0;           // 0: by profile
  size_t connections = 16;
  std::set<std::string> targets;  // empty: all
  // skiffd's near answers as parallel arrays (`columns`), not item objects.
  bool near_columns = true;

  size_t Points() const;
  std::chrono::nanoseconds SearchBudget() const;
  std::chrono::nanoseconds MoveBudget() const;
  size_t Check() const;
  bool Wants(const std::string& target) const {
    return targets.empty() || targets.count(target) > 0;
  }
};

// This process's geo options (from GetSuiteOptions()).
GeoOptions GetGeoOptions();

}  // namespace skiff::bench::geo

#endif  // SKIFF_SUPPORT_GEO_GEO_OPTIONS_H_
