#include "support/latency.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "support/counters.h"

namespace skiff::bench {
namespace {

// 2^kSubBits buckets per power of two above 2^(kSubBits + 1) ns.
constexpr int kSubBits = 7;

// The 1-based nearest rank of quantile q among n samples.
uint64_t RankOf(double q, uint64_t n) {
  const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n)));
  return std::clamp<uint64_t>(rank, 1, n);
}

}  // namespace

// A value v below 2^(kSubBits + 1) has its own bucket. Above, with g the
// number of low bits dropped so that v >> g has kSubBits + 1 bits, bucket
// (g << kSubBits) + (v >> g) follows on from the exact ones without a gap.
size_t LatencyHistogram::BucketOf(int64_t ns) {
  const auto v = static_cast<uint64_t>(ns);
  const int g = std::max(0, static_cast<int>(std::bit_width(v)) - (kSubBits + 1));
  return (static_cast<size_t>(g) << kSubBits) + static_cast<size_t>(v >> g);
}

int64_t LatencyHistogram::UpperEdge(size_t bucket) {
  if (bucket < (size_t{2} << kSubBits)) return static_cast<int64_t>(bucket);
  const size_t g = (bucket >> kSubBits) - 1;
  const uint64_t top = bucket - (g << kSubBits);  // v >> g, in [2^kSubBits, 2^(kSubBits+1))
  return static_cast<int64_t>(((top + 1) << g) - 1);
}

void LatencyHistogram::Record(int64_t ns) {
  ns = std::max<int64_t>(ns, 0);
  const size_t b = BucketOf(ns);
  if (b >= counts_.size()) counts_.resize(b + 1);
  ++counts_[b];
  ++count_;
  max_ns_ = std::max(max_ns_, ns);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  if (other.counts_.size() > counts_.size()) counts_.resize(other.counts_.size());
  for (size_t b = 0; b < other.counts_.size(); ++b) counts_[b] += other.counts_[b];
  count_ += other.count_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

int64_t LatencyHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  const uint64_t rank = RankOf(q, count_);
  uint64_t seen = 0;
  for (size_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (seen >= rank) return std::min(UpperEdge(b), max_ns_);
  }
  return max_ns_;
}

void LatencyRecorder::Record(std::chrono::nanoseconds latency) {
  const int64_t ns = std::max<int64_t>(latency.count(), 0);
  const bool was_exact = exact();
  histogram_.Record(ns);
  sum_ns_ += ns;
  if (!was_exact) return;
  if (samples_ns_.size() < max_samples_) {
    samples_ns_.push_back(ns);
  } else {
    DropSamples();
  }
}

void LatencyRecorder::Merge(const LatencyRecorder& other) {
  const bool both_exact = exact() && other.exact();
  histogram_.Merge(other.histogram_);
  sum_ns_ += other.sum_ns_;
  if (both_exact && samples_ns_.size() + other.samples_ns_.size() <= max_samples_) {
    samples_ns_.insert(samples_ns_.end(), other.samples_ns_.begin(), other.samples_ns_.end());
  } else {
    DropSamples();
  }
}

// The kept samples no longer describe the whole run: the histogram speaks
// for it, and the memory goes back.
void LatencyRecorder::DropSamples() { std::vector<int64_t>().swap(samples_ns_); }

LatencySummary LatencyRecorder::Summarize() const {
  LatencySummary s;
  s.count = histogram_.count();
  if (s.count == 0) return s;
  // Exact: sorted samples; otherwise the histogram, which saw them all.
  std::vector<int64_t> sorted = samples_ns_;
  std::sort(sorted.begin(), sorted.end());
  auto at = [&](double q) {
    const int64_t ns = exact() ? sorted[RankOf(q, sorted.size()) - 1] : histogram_.Percentile(q);
    return static_cast<double>(ns) / 1000.0;
  };
  s.avg_us = static_cast<double>(sum_ns_ / s.count) / 1000.0;
  s.p50_us = at(0.50);
  s.p95_us = at(0.95);
  s.p99_us = at(0.99);
  s.max_us = static_cast<double>(histogram_.max_ns()) / 1000.0;
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
