#include "support/latency.h"

#include <algorithm>
#include <cmath>

#include "support/counters.h"

namespace skiff::bench {

void LatencyRecorder::Record(std::chrono::nanoseconds latency) {
  const int64_t ns = latency.count();
  ++count_;
  sum_ns_ += ns;
  max_ns_ = std::max(max_ns_, ns);
  if (samples_ns_.size() < max_samples_) samples_ns_.push_back(ns);
}

void LatencyRecorder::Merge(const LatencyRecorder& other) {
  count_ += other.count_;
  sum_ns_ += other.sum_ns_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
  const size_t room = max_samples_ - std::min(max_samples_, samples_ns_.size());
  const size_t take = std::min(room, other.samples_ns_.size());
  samples_ns_.insert(samples_ns_.end(), other.samples_ns_.begin(),
                     other.samples_ns_.begin() + static_cast<std::ptrdiff_t>(take));
}

LatencySummary LatencyRecorder::Summarize() const {
  LatencySummary s;
  s.count = count_;
  if (count_ == 0) return s;
  std::vector<int64_t> sorted = samples_ns_;
  std::sort(sorted.begin(), sorted.end());
  // Nearest-rank percentile over the kept samples: the smallest sample with
  // at least q of all samples at or below it.
  auto at = [&](double q) {
    const double n = static_cast<double>(sorted.size());
    size_t rank = static_cast<size_t>(std::ceil(q * n));
    rank = std::clamp<size_t>(rank, 1, sorted.size()) - 1;
    return static_cast<double>(sorted[rank]) / 1000.0;
  };
  s.avg_us = static_cast<double>(sum_ns_ / count_) / 1000.0;
  s.p50_us = at(0.50);
  s.p95_us = at(0.95);
  s.p99_us = at(0.99);
  s.max_us = static_cast<double>(max_ns_) / 1000.0;
  return s;
}

void LatencyRecorder::Report(benchmark::State& state) const {
  const LatencySummary s = Summarize();
  SetInfo(state, "avg_us", s.avg_us);
  SetInfo(state, "p50_us", s.p50_us);
  SetInfo(state, "p95_us", s.p95_us);
  SetInfo(state, "p99_us", s.p99_us);
  SetInfo(state, "max_us", s.max_us);
}

}  // namespace skiff::bench
