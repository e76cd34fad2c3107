// The /metrics renderer (Prometheus text format 0.0.4) and the request
// counters behind it.
#include "server/internal/metrics_text.h"

#include <array>
#include <string>

#include <gtest/gtest.h>

#include "server/internal/metrics_page.h"
#include "server/internal/request_metrics.h"

namespace skiff::server::internal {
namespace {

TEST(MetricsTextTest, FamilyHasHelpThenTypeThenSamples) {
  MetricsText t;
  t.Family("skiff_x_total", "counter", "Things counted.");
  t.Sample("skiff_x_total", {}, uint64_t{3});
  t.Sample("skiff_x_total", {{"op", "get"}, {"outcome", "ok"}}, uint64_t{18446744073709551615u});
  EXPECT_EQ(t.text(),
            "# HELP skiff_x_total Things counted.\n"
            "# TYPE skiff_x_total counter\n"
            "skiff_x_total 3\n"
            "skiff_x_total{op=\"get\",outcome=\"ok\"} 18446744073709551615\n");
}

TEST(MetricsTextTest, EscapesLabelValuesAndHelp) {
  MetricsText t;
  t.Family("skiff_g", "gauge", "a \\ back\nslash \"quoted\"");
  t.Sample("skiff_g", {{"table", "a\"b\\c\nd"}}, uint64_t{1});
  // HELP escapes backslash and newline only; a label value the quote too.
  EXPECT_EQ(t.text(),
            "# HELP skiff_g a \\\\ back\\nslash \"quoted\"\n"
            "# TYPE skiff_g gauge\n"
            "skiff_g{table=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(MetricsTextTest, WritesDoublesInShortestFormAndSpecialValues) {
  MetricsText t;
  t.Sample("a", {}, 0.25);
  t.Sample("b", {}, 1e-05);
  t.Sample("c", {}, std::numeric_limits<double>::infinity());
  t.Sample("d", {}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(t.text(), "a 0.25\nb 1e-05\nc +Inf\nd NaN\n");
}

TEST(MetricsTextTest, HistogramBucketsAreCumulativeEndingWithInfThenSumAndCount) {
  MetricsText t;
  const std::array<double, 3> bounds = {0.001, 0.01, 0.1};
  const std::array<uint64_t, 4> counts = {2, 0, 5, 1};  // each in its own bucket
  t.Family("skiff_d_seconds", "histogram", "Durations.");
  t.Histogram("skiff_d_seconds", {{"class", "read"}}, bounds, counts, 0.75);
  EXPECT_EQ(t.text(),
            "# HELP skiff_d_seconds Durations.\n"
            "# TYPE skiff_d_seconds histogram\n"
            "skiff_d_seconds_bucket{class=\"read\",le=\"0.001\"} 2\n"
            "skiff_d_seconds_bucket{class=\"read\",le=\"0.01\"} 2\n"
            "skiff_d_seconds_bucket{class=\"read\",le=\"0.1\"} 7\n"
            "skiff_d_seconds_bucket{class=\"read\",le=\"+Inf\"} 8\n"
            "skiff_d_seconds_sum{class=\"read\"} 0.75\n"
            "skiff_d_seconds_count{class=\"read\"} 8\n");
}

TEST(MetricsTextTest, HttpResponseCarriesTheFormatsContentType) {
  const std::string r = MetricsHttpResponse("x 1\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos);
  EXPECT_NE(r.find("Content-Length: 4\r\n"), std::string::npos);
  EXPECT_EQ(r.substr(r.size() - 8), "\r\n\r\nx 1\n");
}

TEST(RequestMetricsTest, CountsByOpAndOutcomeAndBucketsLatencyByClass) {
  RequestMetrics m;
  m.Record(Op::kGet, StatusCode::kOk, std::chrono::microseconds(5));   // <= 10 us
  m.Record(Op::kHas, StatusCode::kOk, std::chrono::microseconds(10));  // <= 10 us, on the bound
  m.Record(Op::kGet, StatusCode::kForbidden, std::chrono::milliseconds(3));  // <= 5 ms
  m.Record(Op::kSet, StatusCode::kRateLimited, std::chrono::seconds(2));     // over 1 s
  EXPECT_EQ(m.requests(Op::kGet, StatusCode::kOk), 1u);
  EXPECT_EQ(m.requests(Op::kGet, StatusCode::kForbidden), 1u);
  EXPECT_EQ(m.requests(Op::kSet, StatusCode::kRateLimited), 1u);
  EXPECT_EQ(m.requests(Op::kSet, StatusCode::kOk), 0u);

  const LatencyHistogram read = m.latency(OpClass::kRead);
  EXPECT_EQ(read.counts[0], 2u);
  EXPECT_EQ(read.counts[8], 1u);  // le 0.005
  EXPECT_EQ(read.sum_ns, 5'000u + 10'000u + 3'000'000u);
  const LatencyHistogram write = m.latency(OpClass::kWrite);
  EXPECT_EQ(write.counts.back(), 1u);
}

TEST(MetricsPageTest, NamesEveryFamilyOnceWithRequestsAndLimits) {
  RequestMetrics m;
  m.Record(Op::kGet, StatusCode::kOk, std::chrono::microseconds(40));
  m.Record(Op::kGet, StatusCode::kUnauthorized, std::chrono::microseconds(40));
  StatsFigures f;
  f.store = "memory";
  f.durability = "commit";
  for (int i = 0; i < 7; ++i) m.RecordRefusal(LimitReason::kUserRate);
  f.geo.push_back(GeoTableStats{"shops", "lat/lng", 12, 1, 4096, 3.5});
  f.cluster = ClusterStats{2, 5, 9};
  const std::string page = RenderMetricsPage(f, m);
  for (const char* line : {
           "skiff_requests_total{op=\"get\",outcome=\"ok\"} 1\n",
           "skiff_requests_total{op=\"get\",outcome=\"unauthorized\"} 1\n",
           "skiff_requests_total{op=\"set\",outcome=\"ok\"} 0\n",
           "skiff_request_duration_seconds_bucket{class=\"read\",le=\"0.00005\"} 2\n",
           "skiff_request_duration_seconds_count{class=\"read\"} 2\n",
           "skiff_rate_limited_total{reason=\"user_rate\"} 7\n",
           "skiff_geo_points{table=\"shops\"} 12\n",
           "skiff_cluster_partitions_served 5\n",
           "skiff_cluster_requests_relayed_total 9\n",
           "skiff_info{store=\"memory\",durability=\"commit\"} 1\n",
       }) {
    EXPECT_NE(page.find(line), std::string::npos) << line << "\n" << page;
  }
  // Each family's TYPE line comes once, and every sample belongs to a family
  // named before it.
  size_t types = 0;
  std::string family;
  size_t start = 0;
  while (start < page.size()) {
    const size_t end = page.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    const std::string line = page.substr(start, end - start);
    start = end + 1;
    if (line.rfind("# TYPE ", 0) == 0) {
      ++types;
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(page.find("# TYPE " + family + " "), page.rfind("# TYPE " + family + " "));
    } else if (line[0] != '#') {
      EXPECT_EQ(line.rfind(family, 0), 0u) << line << " outside " << family;
    }
  }
  EXPECT_GT(types, 25u);
}

TEST(MetricsPageTest, RendersCommitHistogramsAndStoreErrors) {
  RequestMetrics m;
  StatsFigures f;
  f.store = "sqlite";
  f.durability = "commit";
  // Three committed batches of 1, 3 and 5000 writes, which took 50 us,
  // 2 ms and 20 s.
  f.commits.transactions = 3;
  f.commits.writes = 5004;
  f.commits.batch_writes[0] = 1;                                // le 1
  f.commits.batch_writes[2] = 1;                                // le 4
  f.commits.batch_writes[kCommitBatchWritesBounds.size()] = 1;  // over 4096
  f.commits.batch_writes_sum = 5004;
  f.commits.duration[0] = 1;                                    // le 0.0001
  f.commits.duration[4] = 1;                                    // le 0.0025
  f.commits.duration[kCommitDurationBoundsSeconds.size()] = 1;  // over 10 s
  f.commits.duration_sum_ns = 20'002'050'000;
  std::string page = RenderMetricsPage(f, m);
  AppendStoreErrors(page, 4, 2);
  for (const char* line : {
           "# TYPE skiff_commit_batch_writes histogram\n",
           "skiff_commit_batch_writes_bucket{le=\"1\"} 1\n",
           "skiff_commit_batch_writes_bucket{le=\"2\"} 1\n",
           "skiff_commit_batch_writes_bucket{le=\"4\"} 2\n",
           "skiff_commit_batch_writes_bucket{le=\"4096\"} 2\n",
           "skiff_commit_batch_writes_bucket{le=\"+Inf\"} 3\n",
           "skiff_commit_batch_writes_sum 5004\n",
           "skiff_commit_batch_writes_count 3\n",
           "# TYPE skiff_commit_duration_seconds histogram\n",
           "skiff_commit_duration_seconds_bucket{le=\"0.0001\"} 1\n",
           "skiff_commit_duration_seconds_bucket{le=\"0.001\"} 1\n",
           "skiff_commit_duration_seconds_bucket{le=\"0.0025\"} 2\n",
           "skiff_commit_duration_seconds_bucket{le=\"10\"} 2\n",
           "skiff_commit_duration_seconds_bucket{le=\"+Inf\"} 3\n",
           "skiff_commit_duration_seconds_sum 20.00205\n",
           "skiff_commit_duration_seconds_count 3\n",
           "# TYPE skiff_store_errors_total counter\n",
           "skiff_store_errors_total{call=\"read\"} 4\n",
           "skiff_store_errors_total{call=\"write\"} 2\n",
       }) {
    EXPECT_NE(page.find(line), std::string::npos) << line << "\n" << page;
  }
  // Appended after the rest: the page still ends with a line end, and the
  // family is named once.
  EXPECT_EQ(page.back(), '\n');
  EXPECT_EQ(page.find("# TYPE skiff_store_errors_total"),
            page.rfind("# TYPE skiff_store_errors_total"));
}

}  // namespace
}  // namespace skiff::server::internal
