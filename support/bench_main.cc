// The main of every bench/*_bench executable.
//
// Google Benchmark's own main exits 0 even when a benchmark errored, so this
// one keeps the verdict: any errored run (an invariant break, a mismatched
// read, a failed setup) makes the process exit 1 with the reasons listed.
// Runs skipped on purpose ("skipped: ..." messages, e.g. no PostgreSQL outside
// CI) are reported but do not fail. It also records the run's context (the
// git revision it was built from, build type, profile, label) and, after the run, writes the kind
// of every counter into the JSON output as context.skiff_counter_kinds.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <stdio.h>
#include <unistd.h>

#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/flag_hooks.h"

#include "skiff_git_revision.h"

namespace skiff::bench {
namespace {

// Console output that also remembers which runs errored.
class VerdictReporter : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (!run.error_occurred) continue;
      const std::string line = run.benchmark_name() + ": " + run.error_message;
      (run.error_message.rfind("skipped:", 0) == 0 ? skipped : errors).push_back(line);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::vector<std::string> errors;
  std::vector<std::string> skipped;
};

// Takes --store=, --profile= out of argv (Google Benchmark rejects unknown
// flags) and returns the --benchmark_out path if one was given.
bool ParseOwnFlags(int* argc, char** argv, std::string* out_path, bool* has_min_time) {
  BenchOptions& options = MutableOptionsForMain();
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--store=", 0) == 0) {
      options.stores.clear();
      std::stringstream list(arg.substr(8));
      for (std::string kind; std::getline(list, kind, ',');) {
        if (kind != "memory" && kind != "sqlite" && kind != "postgres") {
          std::cerr << "unknown store '" << kind << "': use memory, sqlite, postgres\n";
          return false;
        }
        options.stores.insert(kind);
      }
      continue;
    }
    if (arg.rfind("--profile=", 0) == 0) {
      const std::string p = arg.substr(10);
      if (p == "quick")
        options.profile = Profile::kQuick;
      else if (p == "standard")
        options.profile = Profile::kStandard;
      else if (p == "full")
        options.profile = Profile::kFull;
      else {
        std::cerr << "unknown profile '" << p << "': use quick, standard, full\n";
        return false;
      }
      continue;
    }
    // Flags a family added (support/flag_hooks.h).
    std::string hook_error;
    const FlagOutcome hooked = OfferFlag(arg, &hook_error);
    if (hooked == FlagOutcome::kBad) {
      std::cerr << hook_error << "\n";
      return false;
    }
    if (hooked == FlagOutcome::kTaken) continue;
    if (arg.rfind("--benchmark_out=", 0) == 0) *out_path = arg.substr(16);
    if (arg.rfind("--benchmark_min_time=", 0) == 0) *has_min_time = true;
    argv[kept++] = argv[i];
  }
  *argc = kept;
  argv[kept] = nullptr;
  return true;
}

// Adds the counter kinds to the JSON file Google Benchmark wrote, as
// context.skiff_counter_kinds. The file is edited as text: Google Benchmark
// 1.7.1 writes bare NaN for some aggregates (the cv of an all-zero counter),
// which no strict JSON parser reads back.
bool RecordCounterKinds(const std::string& path) {
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  const std::string anchor = "\"context\": {";
  const size_t at = text.find(anchor);
  if (at == std::string::npos) {
    std::cerr << "no context object in " << path << ": counter kinds not recorded\n";
    return false;
  }
  nlohmann::json kinds = nlohmann::json::object();
  for (const auto& [name, kind] : CounterKinds()) kinds[name] = CounterKindName(kind);
  text.insert(at + anchor.size(), "\n    \"skiff_counter_kinds\": " + kinds.dump() + ",");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

int Main(int argc, char** argv) {
  std::string out_path;
  bool has_min_time = false;
  if (!ParseOwnFlags(&argc, argv, &out_path, &has_min_time)) return 2;
  const BenchOptions& options = Options();
  RunRegistrations();

  // The profile sets how long each case runs unless the caller said so.
  std::vector<char*> args(argv, argv + argc);
  std::string min_time;
  if (!has_min_time) {
    const double seconds = 0.2 * options.BudgetScale();
    min_time = "--benchmark_min_time=" + std::to_string(seconds);
    args.push_back(min_time.data());
  }
  args.push_back(nullptr);
  int n = static_cast<int>(args.size()) - 1;
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  benchmark::AddCustomContext("skiff_git_revision", SKIFF_GIT_REVISION);
  benchmark::AddCustomContext("skiff_build_type", SKIFF_BUILD_TYPE);
  benchmark::AddCustomContext("skiff_profile", ProfileName(options.profile));
  std::string stores;
  for (const std::string& s : options.stores) stores += (stores.empty() ? "" : ",") + s;
  benchmark::AddCustomContext("skiff_stores", stores);
  const char* label = std::getenv("SKIFF_BENCH_LABEL");
  benchmark::AddCustomContext("skiff_label", label ? label : "");
  // Debian ships Google Benchmark as a debug build; its overhead is small next
  // to a database round trip, but a reader of the numbers should know.
  benchmark::AddCustomContext("benchmark_library", "Google Benchmark 1.7.1 (Debian, debug build)");

  VerdictReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Defaults
                                                 : benchmark::ConsoleReporter::OO_Tabular);
  const size_t ran = benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  bool ok = true;
  if (!out_path.empty() && !RecordCounterKinds(out_path)) ok = false;
  for (const std::string& s : reporter.skipped) std::cerr << "SKIPPED " << s << "\n";
  for (const std::string& e : reporter.errors) std::cerr << "FAILED " << e << "\n";
  if (ran == 0) {
    std::cerr << "FAILED: no benchmark matched\n";
    ok = false;
  }
  if (!reporter.errors.empty()) ok = false;
  std::cerr << (ok ? "verdict: ok" : "verdict: FAILED") << " (" << ran << " benchmarks, "
            << reporter.errors.size() << " errored, " << reporter.skipped.size() << " skipped)\n";
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace skiff::bench

int main(int argc, char** argv) { return skiff::bench::Main(argc, argv); }
