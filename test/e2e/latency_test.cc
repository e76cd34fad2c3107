// Latency percentiles over known distributions: exact while every sample is
// kept, and from the histogram (every sample, within 1/128 above the true
// value) past that, including runs far longer than the kept samples.
#include "support/latency.h"

#include <chrono>
#include <cstdint>

#include <gtest/gtest.h>

namespace skiff::bench {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

constexpr double kRelativeError = 1.0 / 128;

// True when `got` is `want` or at most kRelativeError above it.
::testing::AssertionResult Near(double got, double want) {
  if (got >= want && got <= want * (1 + kRelativeError)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << got << " is not within [" << want << ", " << want * (1 + kRelativeError) << "]";
}

TEST(LatencyHistogramTest, APercentileIsTheSamplesBucketEdgeNeverBelowIt) {
  // Every value from 1 ns to 2^40 ns, in a geometric sweep, beside a larger
  // one: the median is the bucket edge of the value itself.
  for (int64_t v = 1; v < (int64_t{1} << 40); v += v / 7 + 1) {
    LatencyHistogram h;
    h.Record(v);
    h.Record(v * 4);
    ASSERT_TRUE(Near(double(h.Percentile(0.5)), double(v))) << "value " << v;
    ASSERT_EQ(h.Percentile(1.0), v * 4);  // never above the largest sample
  }
}

TEST(LatencyHistogramTest, ValuesBelow256NanosecondsAreExact) {
  LatencyHistogram h;
  for (int64_t v = 0; v < 256; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(0.5), 127);
  EXPECT_EQ(h.Percentile(1.0), 255);
  h.Record(-5);  // a clock that stepped back counts as 0
  EXPECT_EQ(h.Percentile(1.0 / 257), 0);
}

TEST(LatencyHistogramTest, MergingIsRecordingEverySampleInOne) {
  LatencyHistogram a, b, all;
  for (int64_t i = 1; i <= 1000; ++i) {
    (i % 3 == 0 ? a : b).Record(i * 1000);
    all.Record(i * 1000);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max_ns(), all.max_ns());
  for (double q : {0.01, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(a.Percentile(q), all.Percentile(q));
}

TEST(LatencyRecorderTest, PercentilesAreExactWhileEverySampleIsKept) {
  LatencyRecorder r;
  for (int i = 1; i <= 1000; ++i) r.Record(microseconds(i));
  ASSERT_TRUE(r.exact());
  const LatencySummary s = r.Summarize();
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.p50_us, 500);
  EXPECT_EQ(s.p95_us, 950);
  EXPECT_EQ(s.p99_us, 990);
  EXPECT_EQ(s.max_us, 1000);
  EXPECT_DOUBLE_EQ(s.avg_us, 500.5);
}

TEST(LatencyRecorderTest, AUniformMillionHasItsPercentilesFromEverySample) {
  // 1 ... 1,000,000 µs in an order that is not sorted: twice the kept
  // samples, so the later half decides p99 and max.
  LatencyRecorder r;
  constexpr int64_t kN = 1'000'000;
  for (int64_t i = 0; i < kN; ++i) r.Record(microseconds((i * 7919) % kN + 1));
  EXPECT_FALSE(r.exact());
  const LatencySummary s = r.Summarize();
  EXPECT_EQ(s.count, uint64_t(kN));
  EXPECT_TRUE(Near(s.p50_us, 500'000));
  EXPECT_TRUE(Near(s.p95_us, 950'000));
  EXPECT_TRUE(Near(s.p99_us, 990'000));
  EXPECT_EQ(s.max_us, 1'000'000);
  EXPECT_DOUBLE_EQ(s.avg_us, 500'000.5);
}

TEST(LatencyRecorderTest, ASlowTailAfterTheKeptSamplesIsInP99) {
  // What a first-N cap got wrong: 600,000 fast requests, then a stall.
  LatencyRecorder r;
  for (int i = 0; i < 600'000; ++i) r.Record(microseconds(100));
  for (int i = 0; i < 20'000; ++i) r.Record(microseconds(25'000));
  const LatencySummary s = r.Summarize();
  EXPECT_TRUE(Near(s.p50_us, 100));
  EXPECT_EQ(s.p99_us, 25'000);  // the bucket's edge, held to the largest sample
}

TEST(LatencyRecorderTest, MergingPastTheCapUsesTheHistogram) {
  LatencyRecorder a(1000), b(1000);
  for (int i = 1; i <= 800; ++i) a.Record(microseconds(i));
  for (int i = 801; i <= 1600; ++i) b.Record(microseconds(i));
  a.Merge(b);
  EXPECT_FALSE(a.exact());
  const LatencySummary s = a.Summarize();
  EXPECT_EQ(s.count, 1600u);
  EXPECT_TRUE(Near(s.p50_us, 800));
  EXPECT_TRUE(Near(s.p99_us, 1584));
  EXPECT_EQ(s.max_us, 1600);

  LatencyRecorder c(1000), d(1000);  // within the cap: still exact
  c.Record(microseconds(3));
  d.Record(nanoseconds(1500));
  c.Merge(d);
  EXPECT_TRUE(c.exact());
  EXPECT_EQ(c.Summarize().p50_us, 1.5);
}

}  // namespace
}  // namespace skiff::bench
