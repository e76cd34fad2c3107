// Fuzz target for compare::MergeRuns, the second reader of Google Benchmark
// JSON in the comparer (skiff-merge-runs joins the rounds of one side before
// skiff-compare reads them). It must answer bad_request to anything it cannot
// use, always write valid JSON, and never turn runs the comparer accepts into
// one it refuses.
//
// Input: one or more runs separated by form feeds ('\f'), a byte that valid
// JSON can hold neither between tokens nor raw inside a string.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/status.h"

#include "compare/merge.h"
#include "compare/run.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<skiff::compare::MergeInput> inputs;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  bool all_accepted = true;
  while (true) {
    const size_t end = rest.find('\f');
    skiff::compare::MergeInput input{"run" + std::to_string(inputs.size()),
                                     std::string(rest.substr(0, end))};
    all_accepted = all_accepted && skiff::compare::ParseRun(input.text, input.label).ok();
    inputs.push_back(std::move(input));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }

  skiff::Result<std::string> merged = skiff::compare::MergeRuns(inputs);
  if (!merged.ok()) {
    SKIFF_CHECK(merged.status().code() == skiff::StatusCode::kBadRequest);
    return 0;
  }
  SKIFF_CHECK(nlohmann::json::accept(*merged));
  if (all_accepted) SKIFF_CHECK(skiff::compare::ParseRun(*merged, "merged").ok());
  return 0;
}
