#include "server/internal/metrics_text.h"

#include <charconv>
#include <cmath>

#include "base/check.h"

namespace skiff::server::internal {
namespace {

// HELP text escapes backslash and newline; label values also the quote.
void AppendEscaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void AppendNumber(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    SKIFF_CHECK(ec == std::errc());
    out.append(buffer, end);
  }
}

void AppendNumber(std::string& out, uint64_t value) { out += std::to_string(value); }

}  // namespace

std::string MetricsHttpResponse(std::string_view page) {
  std::string r = "HTTP/1.1 200 OK\r\nContent-Type: ";
  r += kMetricsContentType;
  r += "\r\nContent-Length: ";
  r += std::to_string(page.size());
  r += "\r\nConnection: close\r\n\r\n";
  r += page;
  return r;
}

void MetricsText::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  AppendEscaped(out_, help, /*quote=*/false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void MetricsText::Series(std::string_view name, MetricLabels labels, std::string_view extra_name,
                         std::string_view extra_value) {
  out_ += name;
  if (labels.size() == 0 && extra_name.empty()) return;
  out_ += '{';
  bool first = true;
  auto label = [&](std::string_view key, std::string_view value) {
    if (!first) out_ += ',';
    first = false;
    out_ += key;
    out_ += "=\"";
    AppendEscaped(out_, value, /*quote=*/true);
    out_ += '"';
  };
  for (const auto& [key, value] : labels) label(key, value);
  if (!extra_name.empty()) label(extra_name, extra_value);
  out_ += '}';
}

void MetricsText::Sample(std::string_view name, MetricLabels labels, uint64_t value) {
  Series(name, labels);
  out_ += ' ';
  AppendNumber(out_, value);
  out_ += '\n';
}

void MetricsText::Sample(std::string_view name, MetricLabels labels, double value) {
  Series(name, labels);
  out_ += ' ';
  AppendNumber(out_, value);
  out_ += '\n';
}

void MetricsText::Histogram(std::string_view name, MetricLabels labels,
                            std::span<const double> bounds, std::span<const uint64_t> counts,
                            double sum) {
  SKIFF_CHECK(counts.size() == bounds.size() + 1);
  const std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += counts[i];
    std::string le;
    if (i < bounds.size()) {
      // Plain decimals ("0.00005", not "5e-05"): the bound reads as written.
      char buffer[64];
      auto [end, ec] =
          std::to_chars(buffer, buffer + sizeof buffer, bounds[i], std::chars_format::fixed);
      SKIFF_CHECK(ec == std::errc());
      le.assign(buffer, end);
    } else {
      le = "+Inf";
    }
    Series(bucket, labels, "le", le);
    out_ += ' ';
    AppendNumber(out_, cumulative);
    out_ += '\n';
  }
  Sample(std::string(name) + "_sum", labels, sum);
  Sample(std::string(name) + "_count", labels, cumulative);
}

}  // namespace skiff::server::internal
