#include "support/bench_options.h"

#include "support/suite_options.h"

namespace skiff::bench {

double BenchOptions::BudgetScale() const {
  switch (profile) {
    case Profile::kQuick:
      return 0.25;
    case Profile::kStandard:
      return 1.0;
    case Profile::kFull:
      return 3.0;
  }
  return 1.0;
}

const BenchOptions& Options() { return GetSuiteOptions().bench; }

const char* ProfileName(Profile profile) {
  switch (profile) {
    case Profile::kQuick:
      return "quick";
    case Profile::kStandard:
      return "standard";
    case Profile::kFull:
      return "full";
  }
  return "standard";
}

}  // namespace skiff::bench
