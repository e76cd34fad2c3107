// Which stores to run and how long to run: the rows of the suite's options
// table (support/suite_options.h) every family reads.
//
// Written once by main before any benchmark runs, then only read: safe to read
// from any benchmark thread.
#ifndef SKIFF_SUPPORT_BENCH_OPTIONS_H_
#define SKIFF_SUPPORT_BENCH_OPTIONS_H_

#include <set>
#include <string>

namespace skiff::bench {

enum class Profile { kQuick, kStandard, kFull };

struct BenchOptions {
  std::set<std::string> stores = {"memory", "sqlite", "postgres"};  // --store=a,b
  Profile profile = Profile::kStandard;                             // --profile=
  // Scales a case's budget: x0.25 quick, x1 standard, x3 full.
  double BudgetScale() const;
  bool WantsStore(const std::string& kind) const { return stores.count(kind) > 0; }
};

// The options of this process.
const BenchOptions& Options();

const char* ProfileName(Profile profile);

// The value of this run's profile: ByProfile(seconds(3), seconds(10), seconds(30)).
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

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_BENCH_OPTIONS_H_
