// The suite's one options table: every flag of every bench executable, its
// environment variable and its help text, parsed with CLI11.
//
// Every family accepts every option (an option a family has no use for is
// accepted and ignored), so one command line, or one set of environment
// variables, shapes a whole run. Flags take `--x v` and `--x=v`; a flag wins
// over its variable, which wins over the default. Google Benchmark's own
// `--benchmark_*` flags pass through (joined when given as `--flag value`).
//
// Written once by the suite's main before any benchmark runs, then only read:
// safe to read from any benchmark thread.
#ifndef SKIFF_SUPPORT_SUITE_OPTIONS_H_
#define SKIFF_SUPPORT_SUITE_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "support/bench_options.h"
#include "support/e2e_options.h"

namespace skiff::bench {

struct SuiteOptions {
  BenchOptions bench;  // --store, --profile (Options())
  E2eOptions e2e;      // the end-to-end families' options (GetE2eOptions())
  // A case runs when this regular expression (POSIX extended, Google
  // Benchmark's filter syntax) is found in its family's name (store_bench)
  // or in its own name; empty selects every case.
  std::string filter;
  std::string label;     // names the machine in the JSON context
  std::string run_id;    // names the run; tools/bench sets one per run
  std::string json_out;  // --benchmark_out, where the JSON goes (may be empty)
  // The memory family's sizes; 0 keeps the profile's.
  int64_t memory_documents = 0;
  int64_t memory_pack_after_s = 0;
  int64_t memory_evict_after_s = 0;
  int64_t memory_idle_s = 0;
  // The geo family's sizes and peers (support/geo/geo_options.h); 0 keeps
  // the profile's.
  int64_t geo_points = 0;
  double geo_search_seconds = 0;
  double geo_move_seconds = 0;
  int64_t geo_check = 0;
  int64_t geo_connections = 16;
  std::vector<std::string> geo_targets;  // empty: all
  std::string geo_near_form = "columns";
};

// What the command line asked the main to do.
struct ParsedCommandLine {
  enum class Action { kRun, kHelp, kVersion, kBenchmarkHelp };
  Action action = Action::kRun;
  std::string text;  // the help or version text for those actions
  // Google Benchmark's flags, each as one "--benchmark_x=value" argument.
  std::vector<std::string> benchmark_args;
};

// Parses argv (argv[0] included) into the process's options. `family` is
// the executable's family name, for the help text. bad_request with a
// message for the user on any bad flag, value or variable.
Result<ParsedCommandLine> ParseSuiteCommandLine(int argc, const char* const* argv,
                                                const std::string& family);

// The options of this process (set by ParseSuiteCommandLine).
const SuiteOptions& GetSuiteOptions();

// Names in --skip that matched no case registered in this process.
std::vector<std::string> UnusedSkipNames();

// True when `name` is skipped: --skip holds it, or a prefix of it that ends
// at a '/' ("spike-burst/idle->flood" skips ".../sqlite/commit"). Marks the
// entry used.
bool SkipRequested(const std::string& name);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_SUITE_OPTIONS_H_
