// Number formatting shared by the table, markdown and JSON reports, so the
// same value reads the same everywhere. Pure functions; thread-safe.
#ifndef SKIFF_COMPARE_FORMAT_H_
#define SKIFF_COMPARE_FORMAT_H_

#include <optional>
#include <string>
#include <string_view>

namespace skiff::compare {

// A counter value: shortest form that round-trips to 15 significant digits
// ("3", "0.25", "1.5e+09").
std::string FormatNumber(double v);

// An info counter: six significant digits, whole numbers without exponent up
// to 1e15 ("1485139", "0.637689").
std::string FormatInfoNumber(double v);

// A time given in nanoseconds, shown in `unit` with about four significant
// digits: "255.6 us".
std::string FormatTime(double ns, std::string_view unit);

// "+30.2%", "-1.0%", "+0.0%"; "n/a" when absent.
std::string FormatPercent(std::optional<double> pct);

// "0.012", "<0.001"; "-" when absent.
std::string FormatPValue(std::optional<double> p);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_FORMAT_H_
