// Merges several Google Benchmark JSON outputs of one side (several rounds,
// several bench executables) into one, so the comparer sees every repetition
// of a benchmark as one sample set.
//
// Per-repetition rows are kept and renumbered; aggregate rows are dropped
// (they summarise one round only) unless a benchmark has no repetition rows
// at all. Counter kinds from every input's context are united, the one that
// judges more winning a disagreement (deterministic, then judged, then info). Pure function;
// thread-safe.
#ifndef SKIFF_COMPARE_MERGE_H_
#define SKIFF_COMPARE_MERGE_H_

#include <string>
#include <vector>

#include "base/status.h"

namespace skiff::compare {

struct MergeInput {
  std::string label;  // named in error messages
  std::string text;   // the JSON document
};

// Returns the merged JSON document, or bad_request naming the input at fault.
Result<std::string> MergeRuns(const std::vector<MergeInput>& inputs);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_MERGE_H_
