// RunReporter: the one reporter the suite's main hands to Google Benchmark.
//
// It keeps the verdict (which cases errored, which were skipped on
// purpose), measures how busy the machine was while each case ran
// (support/machine_load.h), drops non-finite aggregate values (the cv of an
// all-zero counter is NaN, which no JSON parser reads back) and passes every
// report on to its outputs: the compact console lines, the JSON document the
// main finishes and writes, Google Benchmark's CSV or console reporter.
//
// Not thread-safe: Google Benchmark calls it from the main thread only.
#ifndef SKIFF_SUPPORT_RUN_REPORTER_H_
#define SKIFF_SUPPORT_RUN_REPORTER_H_

#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "support/machine_load.h"

namespace skiff::bench {

class RunReporter : public benchmark::BenchmarkReporter {
 public:
  RunReporter() = default;
  // Passes every report on to `output` too; not owned, must outlive the run.
  void AddOutput(benchmark::BenchmarkReporter* output) { outputs_.push_back(output); }

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  const std::vector<std::string>& errors() const { return errors_; }
  const std::vector<std::string>& skipped() const { return skipped_; }
  // Names of the cases that ran (errored ones included), in order.
  const std::vector<std::string>& ran() const { return ran_; }
  // Per case: percent of one CPU other processes used while it ran; only
  // cases long enough for the kernel's tick counts to mean something.
  const std::map<std::string, double>& other_cpu_pct() const { return other_cpu_pct_; }
  const support::MachineSample& first_sample() const { return start_; }
  const support::MachineSample& last_sample() const { return last_; }

 private:
  std::vector<benchmark::BenchmarkReporter*> outputs_;
  std::vector<std::string> errors_;
  std::vector<std::string> skipped_;
  std::vector<std::string> ran_;
  std::map<std::string, double> other_cpu_pct_;
  support::MachineSample start_;
  support::MachineSample last_;
};

// One line per case on the console, as each finishes:
//   ok      BM_WriteOne/sqlite                          23.4 µs  42.7 k/s  p99 51 µs
// With repetitions, the median's row. Flags: capped (the budget ended the
// scenario early), noisy (others used the CPU). At most 100 columns.
class CompactReporter : public benchmark::BenchmarkReporter {
 public:
  explicit CompactReporter(const RunReporter& run) : run_(run) {}
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;

 private:
  const RunReporter& run_;
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_RUN_REPORTER_H_
