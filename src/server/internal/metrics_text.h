// MetricsText: writes the Prometheus text exposition format (version
// 0.0.4): a family's HELP and TYPE lines, then its samples, one a line,
// with label values escaped; a histogram as cumulative `_bucket` lines
// ending with le="+Inf", then `_sum` and `_count`.
//
// The caller keeps each family's samples together and names it once.
// Thread-compatible.
#ifndef SKIFF_SERVER_INTERNAL_METRICS_TEXT_H_
#define SKIFF_SERVER_INTERNAL_METRICS_TEXT_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace skiff::server::internal {

// The content type of a page written by MetricsText.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// An HTTP/1.1 200 answer carrying `page`, closing the connection after it.
std::string MetricsHttpResponse(std::string_view page);

using MetricLabels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

class MetricsText {
 public:
  // Starts a family: `type` is counter, gauge, histogram or untyped.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, MetricLabels labels, uint64_t value);
  void Sample(std::string_view name, MetricLabels labels, double value);
  // One histogram of the current family. `bounds` are the buckets' upper
  // bounds, increasing; `counts` has one more entry than `bounds` (the
  // observations over the last bound), each counted in its own bucket only.
  void Histogram(std::string_view name, MetricLabels labels, std::span<const double> bounds,
                 std::span<const uint64_t> counts, double sum);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  // name{labels[,extra]}
  void Series(std::string_view name, MetricLabels labels, std::string_view extra_name = {},
              std::string_view extra_value = {});

  std::string out_;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_METRICS_TEXT_H_
