// Fuzz target for compare::ParseRun, which reads Google Benchmark JSON that
// may come from any version of the library, a truncated CI artifact or a
// hand-edited file. Anything it does not understand must be a bad_request
// Status. A run it accepts must be consistent and must go through the rest of
// the comparer (Compare and the three reports) without crashing, since that is
// what skiff-compare does next.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/status.h"

#include "compare/comparison.h"
#include "compare/report.h"
#include "compare/run.h"

namespace {

using skiff::compare::BenchmarkResult;
using skiff::compare::Run;
using skiff::compare::RunState;

void CheckRun(const Run& run) {
  std::set<std::string> names;
  for (const BenchmarkResult& b : run.benchmarks) {
    SKIFF_CHECK(names.insert(b.name).second);  // one result per run_name
    SKIFF_CHECK(skiff::compare::NanosPerUnit(b.time_unit) > 0);
    SKIFF_CHECK(b.real_ns.size() == b.cpu_ns.size());
    if (b.state != RunState::kOk) SKIFF_CHECK(b.real_ns.empty());
    for (const auto& [counter, values] : b.counters) {
      SKIFF_CHECK(values.size() <= b.real_ns.size());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  skiff::Result<Run> run = skiff::compare::ParseRun(text, "fuzz.json");
  if (!run.ok()) {
    SKIFF_CHECK(run.status().code() == skiff::StatusCode::kBadRequest);
    return 0;
  }
  CheckRun(*run);

  // The run against itself, and against an empty run (everything added).
  const skiff::compare::Settings settings;
  const skiff::compare::ReportLabels labels;
  const Run empty;
  for (const Run* base : {static_cast<const Run*>(&*run), &empty}) {
    const skiff::compare::Comparison comparison = skiff::compare::Compare(*base, *run, settings);
    skiff::compare::RenderTable(comparison, labels);
    skiff::compare::RenderMarkdown(comparison, labels);
    // Scripts read the JSON report, so it must parse whatever the run held.
    const std::string json = skiff::compare::RenderJson(comparison, labels);
    SKIFF_CHECK(nlohmann::json::accept(json));
  }
  return 0;
}
