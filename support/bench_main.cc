// The main of every bench/*_bench executable.
//
// It parses the suite's options table (support/suite_options.h), registers
// the family's cases, runs them through one reporter (support/
// run_reporter.h) and keeps the verdict: Google Benchmark's own main exits 0
// even when a case errored, so this one exits 2 when any case errored or
// broke a check, 5 when the filter selected nothing, 64 on bad arguments.
// Cases skipped on purpose ("skipped: ..." messages) are listed, never
// failures. It owns the JSON output: Google Benchmark's JSON document with
// the suite's context added (support/run_json.h), written once, valid, to
// --benchmark_out and/or stdout (--benchmark_format=json).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <stdio.h>
#include <unistd.h>

#include "support/bench_family.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/run_facts.h"
#include "support/run_json.h"
#include "support/run_reporter.h"
#include "support/suite_options.h"

#include "skiff_git_revision.h"

namespace skiff::bench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 2;
constexpr int kExitNothingSelected = 5;
constexpr int kExitUsage = 64;

// The output flags this main handles itself; every other --benchmark_ flag
// goes to Google Benchmark.
struct Outputs {
  std::string out_path;             // --benchmark_out
  std::string out_format = "json";  // --benchmark_out_format
  std::string format = "console";   // --benchmark_format
  bool list = false;                // --benchmark_list_tests
  bool has_filter = false;          // --benchmark_filter
  bool has_min_time = false;        // --benchmark_min_time
};

bool TakeValue(const std::string& arg, const char* flag, std::string* value) {
  const std::string prefix = std::string(flag) + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  *value = arg.substr(prefix.size());
  return true;
}

// Splits the output flags off; the rest stays for Google Benchmark.
Result<Outputs> TakeOutputFlags(std::vector<std::string>* args) {
  Outputs o;
  std::vector<std::string> rest;
  for (const std::string& arg : *args) {
    std::string value;
    if (TakeValue(arg, "--benchmark_out", &value)) {
      o.out_path = value;
    } else if (TakeValue(arg, "--benchmark_out_format", &value)) {
      o.out_format = value;
    } else if (TakeValue(arg, "--benchmark_format", &value)) {
      o.format = value;
    } else {
      o.list = o.list || arg == "--benchmark_list_tests" || arg == "--benchmark_list_tests=true";
      o.has_filter = o.has_filter || arg.rfind("--benchmark_filter=", 0) == 0;
      o.has_min_time = o.has_min_time || arg.rfind("--benchmark_min_time=", 0) == 0;
      rest.push_back(arg);
    }
  }
  for (const std::string* f : {&o.out_format, &o.format}) {
    if (*f != "console" && *f != "json" && *f != "csv") {
      return BadRequest("a benchmark format is console, json or csv, not '" + *f + "'");
    }
  }
  *args = std::move(rest);
  return o;
}

// --filter selects a whole family when it matches the family's name, else
// it is Google Benchmark's filter over case names.
Result<std::string> FilterArg(const std::string& filter, const std::string& family,
                              bool has_benchmark_filter) {
  if (filter.empty()) return std::string();
  if (has_benchmark_filter) return BadRequest("use one of --filter and --benchmark_filter");
  try {
    if (std::regex_search(family, std::regex(filter, std::regex::extended))) return std::string();
  } catch (const std::regex_error&) {
    return BadRequest("--filter: not a regular expression: " + filter);
  }
  return "--benchmark_filter=" + filter;
}

// Google Benchmark's CSV reporter is deprecated but still the only CSV.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
std::unique_ptr<benchmark::BenchmarkReporter> MakeReporter(const std::string& format) {
  if (format == "csv") return std::make_unique<benchmark::CSVReporter>();
  return std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
}
#pragma GCC diagnostic pop

std::map<std::string, std::string> ContextOf(const std::string& family) {
  const SuiteOptions& o = GetSuiteOptions();
  std::map<std::string, std::string> c = support::Facts();
  c["skiff_family"] = family;
  c["skiff_git_revision"] = SKIFF_GIT_REVISION;
  c["skiff_version"] = SKIFF_VERSION;
  c["skiff_build_type"] = SKIFF_BUILD_TYPE;
  c["skiff_profile"] = ProfileName(o.bench.profile);
  c["skiff_label"] = o.label;
  c["skiff_run_id"] = o.run_id;
  c["skiff_benchmark_library"] = "Google Benchmark " SKIFF_BENCHMARK_VERSION;
  return c;
}

int Main(int argc, char** argv) {
  const std::string family = kBenchFamily;
  Result<ParsedCommandLine> parsed = ParseSuiteCommandLine(argc, argv, family);
  if (!parsed.ok()) {
    std::cerr << family << ": " << parsed.status().message() << "\nRun with --help for more.\n";
    return kExitUsage;
  }
  switch (parsed->action) {
    case ParsedCommandLine::Action::kHelp:
    case ParsedCommandLine::Action::kVersion:
      std::cout << parsed->text << "\n";
      return kExitOk;
    case ParsedCommandLine::Action::kBenchmarkHelp: {
      std::vector<char*> help = {argv[0], const_cast<char*>("--help"), nullptr};
      int n = 2;
      benchmark::Initialize(&n, help.data());  // prints Google Benchmark's usage and exits
      return kExitOk;
    }
    case ParsedCommandLine::Action::kRun:
      break;
  }
  std::vector<std::string> args = parsed->benchmark_args;
  Result<Outputs> outputs = TakeOutputFlags(&args);
  if (!outputs.ok()) {
    std::cerr << family << ": " << outputs.status().message() << "\n";
    return kExitUsage;
  }
  const SuiteOptions& options = GetSuiteOptions();
  Result<std::string> filter = FilterArg(options.filter, family, outputs->has_filter);
  if (!filter.ok()) {
    std::cerr << family << ": " << filter.status().message() << "\n";
    return kExitUsage;
  }
  if (!filter->empty()) args.push_back(*filter);
  // The profile sets how long each case runs unless the caller said so.
  if (!outputs->has_min_time) {
    args.push_back("--benchmark_min_time=" + std::to_string(0.2 * options.bench.BudgetScale()));
  }
  RunRegistrations();
  for (const std::string& name : UnusedSkipNames()) {
    std::cerr << family << ": --skip '" << name << "' names no case of this family\n";
  }

  std::vector<char*> gb_argv = {argv[0]};
  for (std::string& a : args) gb_argv.push_back(a.data());
  gb_argv.push_back(nullptr);
  int n = static_cast<int>(gb_argv.size()) - 1;
  benchmark::Initialize(&n, gb_argv.data());
  if (benchmark::ReportUnrecognizedArguments(n, gb_argv.data())) return kExitUsage;

  // Every report goes through `run`; it passes them on to the JSON document,
  // the console and a file in another format when one was asked for.
  RunReporter run;
  std::ostringstream json_text;
  benchmark::JSONReporter json;
  json.SetOutputStream(&json_text);
  json.SetErrorStream(&std::cerr);
  run.AddOutput(&json);
  CompactReporter compact(run);
  std::unique_ptr<benchmark::BenchmarkReporter> csv;
  if (outputs->format == "console") {
    run.AddOutput(&compact);
  } else if (outputs->format == "csv") {
    csv = MakeReporter("csv");
    run.AddOutput(csv.get());
  }
  std::ofstream other_file;
  std::unique_ptr<benchmark::BenchmarkReporter> file_reporter;
  if (!outputs->out_path.empty() && outputs->out_format != "json") {
    other_file.open(outputs->out_path, std::ios::trunc);
    if (!other_file) {
      std::cerr << family << ": cannot write " << outputs->out_path << "\n";
      return kExitUsage;
    }
    file_reporter = MakeReporter(outputs->out_format);
    file_reporter->SetOutputStream(&other_file);
    file_reporter->SetErrorStream(&other_file);
    run.AddOutput(file_reporter.get());
  }

  const size_t selected = benchmark::RunSpecifiedBenchmarks(&run);
  benchmark::Shutdown();
  if (outputs->list) return selected > 0 ? kExitOk : kExitNothingSelected;
  if (selected == 0) {
    std::cerr << family << ": no case selected"
              << (options.filter.empty() ? "" : " by --filter '" + options.filter + "'")
              << "\nverdict: nothing selected\n";
    return kExitNothingSelected;
  }

  bool ok = true;
  Result<nlohmann::ordered_json> document = ParseBenchmarkJson(json_text.str());
  RunSummary summary;
  summary.context = ContextOf(family);
  for (const auto& [name, kind] : CounterKinds())
    summary.counter_kinds[name] = CounterKindName(kind);
  summary.ran = run.ran();
  summary.other_cpu_pct = run.other_cpu_pct();
  summary.start = run.first_sample();
  summary.end = run.last_sample();
  Status added = document.ok() ? AddSuiteContext(*document, summary) : document.status();
  if (!added.ok()) {
    std::cerr << "FAILED: the JSON output: " << added.message() << "\n";
    ok = false;
  } else {
    const std::string text = document->dump(2) + "\n";
    if (outputs->format == "json") std::cout << text << std::flush;
    if (!outputs->out_path.empty() && outputs->out_format == "json") {
      if (Status written = WriteFileAtomically(outputs->out_path, text); !written.ok()) {
        std::cerr << "FAILED: " << written.message() << "\n";
        ok = false;
      }
    }
    const nlohmann::ordered_json& machine = (*document)["context"]["skiff_machine"];
    if (machine.value("noisy", false)) {
      // The JSON has the figures and every noisy case; the console says
      // enough to doubt the times.
      char line[160];
      std::snprintf(
          line, sizeof line,
          "warning: noisy machine: others used %.0f%% of a CPU (load %.1f at the start)",
          machine["other_cpu_pct"].is_number() ? machine["other_cpu_pct"].get<double>() : 0.0,
          machine["loadavg_start"][0].get<double>());
      const size_t noisy = machine["noisy_cases"].size();
      std::cerr << line << (noisy == 0 ? "" : "; " + std::to_string(noisy) + " noisy case(s)")
                << "\n";
    }
  }
  for (const std::string& s : run.skipped()) std::cerr << "SKIPPED " << s << "\n";
  for (const std::string& e : run.errors()) std::cerr << "FAILED " << e << "\n";
  if (!run.errors().empty()) ok = false;
  std::cerr << (ok ? "verdict: ok" : "verdict: FAILED") << " (" << selected << " cases, "
            << run.errors().size() << " errored, " << run.skipped().size() << " skipped)\n";
  return ok ? kExitOk : kExitFailed;
}

}  // namespace
}  // namespace skiff::bench

int main(int argc, char** argv) { return skiff::bench::Main(argc, argv); }
