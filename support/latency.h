// LatencyRecorder: per-operation latencies of a benchmark, summarised as
// avg / p50 / p95 / p99 / max in microseconds.
//
// Samples are kept exactly (up to a cap, after which every further sample
// only updates count, sum and max) so percentiles are not bucket estimates.
// One recorder per thread; merge them after the run.
#ifndef SKIFF_SUPPORT_LATENCY_H_
#define SKIFF_SUPPORT_LATENCY_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

namespace skiff::bench {

struct LatencySummary {
  uint64_t count = 0;
  double avg_us = 0, p50_us = 0, p95_us = 0, p99_us = 0, max_us = 0;
};

class LatencyRecorder {
 public:
  static constexpr size_t kDefaultMaxSamples = 500'000;
  explicit LatencyRecorder(size_t max_samples = kDefaultMaxSamples) : max_samples_(max_samples) {}

  void Record(std::chrono::nanoseconds latency);
  void Merge(const LatencyRecorder& other);
  LatencySummary Summarize() const;

  // Sets avg_us, p50_us, p95_us, p99_us and max_us as info counters.
  void Report(benchmark::State& state) const;

 private:
  size_t max_samples_;
  std::vector<int64_t> samples_ns_;
  uint64_t count_ = 0;
  long double sum_ns_ = 0;
  int64_t max_ns_ = 0;
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_LATENCY_H_
