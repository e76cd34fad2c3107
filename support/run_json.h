// The suite's JSON output: Google Benchmark's JSON document with the suite's
// context added as JSON values (not text spliced in): the counter kinds,
// what ran (stores, facts the cases recorded), the build, and how busy the
// machine was. Written once, by the suite's main, valid JSON.
//
// Pure functions over values, except WriteFileAtomically; thread-compatible.
#ifndef SKIFF_SUPPORT_RUN_JSON_H_
#define SKIFF_SUPPORT_RUN_JSON_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "support/machine_load.h"

namespace skiff::bench {

struct RunSummary {
  std::map<std::string, std::string> context;        // string keys: revision, profile, ...
  std::map<std::string, std::string> counter_kinds;  // name -> "deterministic" | "info"
  std::vector<std::string> ran;                      // case names that ran
  std::map<std::string, double> other_cpu_pct;       // per case (support/machine_load.h)
  support::MachineSample start;
  support::MachineSample end;
};

// The store kinds named by a segment of a case name ("BM_WriteOne/sqlite",
// "get-hot/sequential/postgres/commit"): the suite's naming rule for cases
// that use a store. Sorted, without repeats; empty when none did.
std::vector<std::string> StoresOfCases(const std::vector<std::string>& names);

// Adds the summary to `document` (Google Benchmark's JSON, parsed).
// bad_request when the document has no context object or benchmark list.
Status AddSuiteContext(nlohmann::ordered_json& document, const RunSummary& summary);

// Parses Google Benchmark's JSON text; bad_request when it is not JSON.
Result<nlohmann::ordered_json> ParseBenchmarkJson(const std::string& text);

// Writes `text` beside `path` and renames it over, so a reader never sees
// half a file. internal on any I/O error.
Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_RUN_JSON_H_
