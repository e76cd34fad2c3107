#include "support/run_reporter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string_view>
#include <utility>

namespace skiff::bench {
namespace {

// Kernel tick counts are 10 ms wide: a shorter case says nothing about load.
constexpr double kMinSampledSeconds = 0.5;

bool IsSkipMessage(const std::string& message) { return message.rfind("skipped", 0) == 0; }

// Aggregates of counters that are 0 everywhere divide by zero (cv); such a
// value carries no information and would make the JSON invalid.
std::vector<benchmark::BenchmarkReporter::Run> Finite(
    const std::vector<benchmark::BenchmarkReporter::Run>& runs) {
  std::vector<benchmark::BenchmarkReporter::Run> out = runs;
  for (auto& run : out) {
    for (auto it = run.counters.begin(); it != run.counters.end();) {
      it = std::isfinite(it->second.value) ? std::next(it) : run.counters.erase(it);
    }
    if (!std::isfinite(run.real_accumulated_time)) run.real_accumulated_time = 0;
    if (!std::isfinite(run.cpu_accumulated_time)) run.cpu_accumulated_time = 0;
  }
  return out;
}

std::string Rate(double per_second) {
  char buf[32];
  if (per_second >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M/s", per_second / 1e6);
  } else if (per_second >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k/s", per_second / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f /s", per_second);
  }
  return buf;
}

// A time in `unit`, shown in the unit that reads best: "23.4 µs", "1.17 ms".
std::string Time(double value, benchmark::TimeUnit unit) {
  double ns = value;
  switch (unit) {
    case benchmark::kSecond:
      ns *= 1e9;
      break;
    case benchmark::kMillisecond:
      ns *= 1e6;
      break;
    case benchmark::kMicrosecond:
      ns *= 1e3;
      break;
    case benchmark::kNanosecond:
      break;
  }
  constexpr std::pair<double, const char*> kUnits[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}};
  const char* name = "ns";
  double shown = ns;
  for (const auto& [scale, unit_name] : kUnits) {
    if (ns < scale) continue;
    name = unit_name;
    shown = ns / scale;
    break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf,
                shown >= 100  ? "%.0f %s"
                : shown >= 10 ? "%.1f %s"
                              : "%.2f %s",
                shown, name);
  return buf;
}

// Without the segments Google Benchmark adds for its own settings
// ("/iterations:1", "/real_time", "/manual_time").
std::string DisplayName(const std::string& name) {
  std::string out;
  size_t at = 0;
  while (at < name.size()) {
    const size_t end = std::min(name.find('/', at), name.size());
    const std::string_view segment(name.data() + at, end - at);
    const bool own = segment == "real_time" || segment == "manual_time" ||
                     segment.rfind("iterations:", 0) == 0 || segment.rfind("repeats:", 0) == 0;
    if (!own || out.empty()) out += (out.empty() ? "" : "/") + std::string(segment);
    at = end + 1;
  }
  return out;
}

const benchmark::Counter* Find(const benchmark::BenchmarkReporter::Run& run, const char* name) {
  auto it = run.counters.find(name);
  return it == run.counters.end() ? nullptr : &it->second;
}

}  // namespace

bool RunReporter::ReportContext(const Context& context) {
  start_ = last_ = support::TakeMachineSample();
  bool ok = true;
  for (auto* out : outputs_) ok = out->ReportContext(context) && ok;
  return ok;
}

void RunReporter::ReportRuns(const std::vector<Run>& runs) {
  const support::MachineSample now = support::TakeMachineSample();
  if (!runs.empty() && now.wall_seconds - last_.wall_seconds >= kMinSampledSeconds) {
    const double other = support::OtherCpuPercent(last_, now);
    if (other >= 0) other_cpu_pct_[runs.front().run_name.str()] = other;
  }
  last_ = now;
  for (const Run& run : runs) {
    if (run.run_type != Run::RT_Iteration) continue;
    const std::string name = run.benchmark_name();
    if (ran_.empty() || ran_.back() != run.run_name.str()) ran_.push_back(run.run_name.str());
    if (!run.error_occurred) continue;
    const std::string line = name + ": " + run.error_message;
    (IsSkipMessage(run.error_message) ? skipped_ : errors_).push_back(line);
  }
  const std::vector<Run> finite = Finite(runs);
  for (auto* out : outputs_) out->ReportRuns(finite);
}

void RunReporter::Finalize() {
  last_ = support::TakeMachineSample();
  for (auto* out : outputs_) out->Finalize();
}

bool CompactReporter::ReportContext(const Context&) { return true; }

void CompactReporter::ReportRuns(const std::vector<Run>& runs) {
  // Google Benchmark reports a case's repetitions, then (with more than one)
  // their aggregates in a second call: the median's row stands for the
  // case then, else its one row. A failure is shown at once.
  const Run* shown = nullptr;
  const Run* failed = nullptr;
  size_t repetitions = 0;
  for (const Run& run : runs) {
    if (run.run_type == Run::RT_Iteration) {
      ++repetitions;
      if (run.error_occurred && failed == nullptr) failed = &run;
      if (shown == nullptr) shown = &run;
    } else if (run.aggregate_name == "median") {
      shown = &run;
      repetitions = static_cast<size_t>(run.repetitions);
    }
  }
  if (shown == nullptr) return;
  if (failed == nullptr && shown->run_type == Run::RT_Iteration && shown->repetitions > 1) return;
  std::string name = DisplayName(shown->run_name.str());
  if (name.size() > 44) name = name.substr(0, 43) + "~";
  char line[256];
  if (failed != nullptr) {
    const bool skip = IsSkipMessage(failed->error_message);
    std::string why = failed->error_message;
    if (why.size() > 48) why = why.substr(0, 47) + "~";
    std::snprintf(line, sizeof line, "  %-7s %-44s %s", skip ? "skipped" : "FAILED", name.c_str(),
                  why.c_str());
    GetOutputStream() << line << std::endl;
    return;
  }
  std::string figures = Time(shown->GetAdjustedRealTime(), shown->time_unit);
  const benchmark::Counter* rate = Find(*shown, "items_per_second");
  if (rate == nullptr) rate = Find(*shown, "ops_per_s");
  if (rate != nullptr) figures += "  " + Rate(rate->value);
  if (const benchmark::Counter* p99 = Find(*shown, "p99_us")) {
    figures += "  p99 " + Time(p99->value, benchmark::kMicrosecond);
  }
  std::string flags;
  if (const benchmark::Counter* capped = Find(*shown, "capped"); capped && capped->value > 0) {
    flags += " capped";
  }
  if (auto it = run_.other_cpu_pct().find(shown->run_name.str());
      it != run_.other_cpu_pct().end() && it->second > support::kNoisyOtherCpuPercent) {
    flags += " noisy(" + std::to_string(static_cast<int>(it->second)) + "%)";
  }
  if (repetitions > 1) flags += " median/" + std::to_string(repetitions);
  std::snprintf(line, sizeof line, "  %-7s %-44s %s%s", "ok", name.c_str(), figures.c_str(),
                flags.c_str());
  GetOutputStream() << line << std::endl;
}

}  // namespace skiff::bench
