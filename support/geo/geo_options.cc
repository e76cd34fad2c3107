#include "support/geo/geo_options.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "support/bench_options.h"
#include "support/flag_hooks.h"
#include "support/geo/geo_workload.h"

namespace skiff::bench::geo {
namespace {

GeoOptions& Mutable() {
  static GeoOptions* options = new GeoOptions();  // read until exit
  return *options;
}

// A profile's pick: quick, standard, full.
template <typename T>
T ByProfile(T quick, T standard, T full) {
  switch (Options().profile) {
    case Profile::kQuick:
      return quick;
    case Profile::kStandard:
      return standard;
    case Profile::kFull:
      return full;
  }
  return standard;
}

bool ParseNumber(const std::string& text, double min, double max, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !(v >= min && v <= max)) return false;
  *out = v;
  return true;
}

FlagOutcome Apply(const std::string& arg, std::string* error) {
  const size_t eq = arg.find('=');
  if (arg.rfind("--geo-", 0) != 0 || eq == std::string::npos) return FlagOutcome::kNotMine;
  const std::string name = arg.substr(2, eq - 2);
  const std::string value = arg.substr(eq + 1);
  GeoOptions& o = Mutable();
  double v = 0;
  auto number = [&](double min, double max) {
    if (ParseNumber(value, min, max, &v)) return true;
    *error = "--" + name + " takes a number from " + std::to_string(min) + " to " +
             std::to_string(max) + ", not '" + value + "'";
    return false;
  };
  if (name == "geo-points") {
    if (!number(100, 10'000'000)) return FlagOutcome::kBad;
    o.points = size_t(v);
  } else if (name == "geo-search-seconds") {
    if (!number(0.1, 3600)) return FlagOutcome::kBad;
    o.search_seconds = v;
  } else if (name == "geo-move-seconds") {
    if (!number(0.1, 3600)) return FlagOutcome::kBad;
    o.move_seconds = v;
  } else if (name == "geo-check") {
    if (!number(1, 10'000)) return FlagOutcome::kBad;
    o.check = size_t(v);
  } else if (name == "geo-connections") {
    if (!number(1, 256)) return FlagOutcome::kBad;
    o.connections = size_t(v);
  } else if (name == "geo-targets") {
    o.targets.clear();
    std::stringstream list(value);
    for (std::string t; std::getline(list, t, ',');) {
      if (!t.empty()) o.targets.insert(t);
    }
  } else {
    *error = "unknown flag --" + name;
    return FlagOutcome::kBad;
  }
  return FlagOutcome::kTaken;
}

const bool kHooked = AddFlagHook(Apply);

}  // namespace

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

const GeoOptions& GetGeoOptions() {
  (void)kHooked;
  return Mutable();
}

}  // namespace skiff::bench::geo
