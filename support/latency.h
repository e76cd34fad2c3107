// Per-operation latencies of a benchmark, summarised as avg / p50 / p95 /
// p99 / max in microseconds.
//
// LatencyHistogram counts every sample in log-linear buckets (HdrHistogram's
// layout: exact below 256 ns, then 128 buckets per power of two), so a
// percentile read from it covers the whole run and is at most 1/128 (0.8 %)
// above the true sample, never below it. LatencyRecorder also keeps the
// samples exactly while there are at most `max_samples` of them; past that
// its percentiles come from the histogram, which has seen every sample (a
// cap on kept samples alone would describe only the start of a long run).
//
// Not thread-safe: one recorder per thread; merge them after the run.
#ifndef SKIFF_SUPPORT_LATENCY_H_
#define SKIFF_SUPPORT_LATENCY_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

namespace skiff::bench {

class LatencyHistogram {
 public:
  // Negative samples (a clock that stepped back) count as 0.
  void Record(int64_t ns);
  void Merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  int64_t max_ns() const { return max_ns_; }
  // The nearest-rank q-quantile (0 < q <= 1): the upper edge of the bucket
  // holding the ceil(q * count)-th smallest sample, at most the largest
  // sample. 0 when empty.
  int64_t Percentile(double q) const;

 private:
  static size_t BucketOf(int64_t ns);
  static int64_t UpperEdge(size_t bucket);

  std::vector<uint64_t> counts_;  // grown to the highest bucket used
  uint64_t count_ = 0;
  int64_t max_ns_ = 0;
};

struct LatencySummary {
  uint64_t count = 0;
  double avg_us = 0, p50_us = 0, p95_us = 0, p99_us = 0, max_us = 0;
};

class LatencyRecorder {
 public:
  static constexpr size_t kDefaultMaxSamples = 500'000;
  // Percentiles are exact while at most `max_samples` were recorded.
  explicit LatencyRecorder(size_t max_samples = kDefaultMaxSamples) : max_samples_(max_samples) {}

  void Record(std::chrono::nanoseconds latency);
  void Merge(const LatencyRecorder& other);
  LatencySummary Summarize() const;
  // True while every sample is kept (percentiles are exact).
  bool exact() const { return samples_ns_.size() == histogram_.count(); }

  // Sets avg_us, p50_us, p95_us, p99_us and max_us as info counters.
  void Report(benchmark::State& state) const;

 private:
  void DropSamples();

  size_t max_samples_;
  std::vector<int64_t> samples_ns_;  // every sample while exact(), else none
  LatencyHistogram histogram_;       // every sample
  long double sum_ns_ = 0;
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_LATENCY_H_
