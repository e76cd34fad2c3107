#include "compare/format.h"

#include <cmath>
#include <cstdio>

#include "compare/run.h"

namespace skiff::compare {

std::string FormatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  return buf;
}

std::string FormatInfoNumber(double v) {
  char buf[64];
  const double magnitude = std::fabs(v);
  std::snprintf(buf, sizeof(buf), magnitude >= 1e6 && magnitude < 1e15 ? "%.0f" : "%.6g", v);
  return buf;
}

std::string FormatTime(double ns, std::string_view unit) {
  double scale = NanosPerUnit(unit);
  if (scale == 0) {
    scale = 1;
    unit = "ns";
  }
  const double v = ns / scale;
  const double magnitude = std::fabs(v);
  // Four significant digits at most; below 1 "%.3g" keeps small values
  // ("0.0121 s") readable instead of rounding them to zero.
  const char* format = magnitude >= 1000  ? "%.0f"
                       : magnitude >= 100 ? "%.1f"
                       : magnitude >= 10  ? "%.2f"
                       : magnitude >= 1   ? "%.3f"
                                          : "%#.3g";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return std::string(buf) + " " + std::string(unit);
}

std::string FormatPercent(std::optional<double> pct) {
  if (!pct) return "n/a";
  char buf[64];
  // Keep a sign on zero too, so a column of changes lines up.
  std::snprintf(buf, sizeof(buf), "%+.1f%%", *pct == 0 ? 0.0 : *pct);
  return buf;
}

std::string FormatPValue(std::optional<double> p) {
  if (!p) return "-";
  if (*p < 0.001) return "<0.001";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", *p);
  return buf;
}

}  // namespace skiff::compare
