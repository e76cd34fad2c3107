// Run: one Google Benchmark JSON output (--benchmark_out_format=json), reduced
// to what the comparer judges: per-benchmark time samples, counter samples,
// error state and the declared counter kinds.
//
// ParseRun accepts the 1.7.1 format. Anything unexpected in the input is a
// bad_request Status, never a crash. The types are plain values and
// thread-compatible.
#ifndef SKIFF_COMPARE_RUN_H_
#define SKIFF_COMPARE_RUN_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace skiff::compare {

// How the comparer treats a counter. Undeclared counters are info.
//   deterministic  must be equal on both sides (a change fails the run);
//   judged         a resource figure (server CPU per operation, memory)
//                  judged over repetitions like a time, in its direction;
//   info           shown, never judged.
enum class CounterKind { kInfo, kDeterministic, kJudgedLower, kJudgedHigher };

// The kind's name in skiff_counter_kinds: "info", "deterministic",
// "judged_lower", "judged_higher".
std::string_view CounterKindName(CounterKind kind);

enum class RunState { kOk, kErrored, kSkipped };

// Everything one run says about one benchmark (one run_name).
struct BenchmarkResult {
  std::string name;              // run_name: shared by repetitions and aggregates
  std::string time_unit = "ns";  // unit used for display ("ns", "us", "ms", "s")
  std::string label;             // the first row's "label" (SetLabel), if any
  RunState state = RunState::kOk;
  std::string error_message;  // first message when errored or skipped
  // One sample per repetition, in nanoseconds. When the run holds only
  // aggregate rows, one sample per "median" (else "mean") aggregate row.
  std::vector<double> real_ns;
  std::vector<double> cpu_ns;
  // One sample per repetition of 1e9 / items_per_second: the time per item
  // (per operation, per row) when every sample reports a rate; else empty.
  // A run cut short by a time budget keeps its rate honest where its time
  // per iteration does not.
  std::vector<double> per_item_ns;
  bool from_aggregates = false;
  // Counter name -> one value per sample (a counter missing from a row
  // simply has fewer values).
  std::map<std::string, std::vector<double>> counters;
};

struct Run {
  std::vector<BenchmarkResult> benchmarks;  // in order of first appearance
  // From context.skiff_counter_kinds (an object, or a string holding one,
  // which is what benchmark::AddCustomContext can write).
  std::map<std::string, CounterKind> counter_kinds;
  // The run's "context" object (machine, run id, revision) as JSON text,
  // passed through to the JSON report for the results page; "{}" when absent.
  std::string context = "{}";

  const BenchmarkResult* Find(std::string_view name) const;
};

// Parses the text of one JSON output. `label` names the input in messages.
Result<Run> ParseRun(std::string_view text, std::string_view label);

// Reads and parses a file; an unreadable file is a bad_request Status.
Result<Run> LoadRun(const std::string& path);

// Nanoseconds per one `unit`; 0 for an unknown unit.
double NanosPerUnit(std::string_view unit);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_RUN_H_
