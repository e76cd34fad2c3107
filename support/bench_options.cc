#include "support/bench_options.h"

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

BenchOptions& MutableOptionsForMain() {
  static BenchOptions* options = new BenchOptions();  // read until exit
  return *options;
}

const BenchOptions& Options() { return MutableOptionsForMain(); }

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
