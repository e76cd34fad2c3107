#include "support/e2e_options.h"

#include <cstdlib>
#include <string_view>

#include "support/bench_options.h"
#include "support/suite_options.h"

namespace skiff::bench {

std::chrono::nanoseconds E2eOptions::Cap() const {
  if (cap_ms > 0) return std::chrono::milliseconds(cap_ms);
  return std::chrono::nanoseconds(static_cast<int64_t>(25e9 * Options().BudgetScale()));
}

bool E2eOptions::Skipped(const std::string& scenario) const { return SkipRequested(scenario); }

const E2eOptions& GetE2eOptions() { return GetSuiteOptions().e2e; }

bool ParseWsUrl(const std::string& url, std::string* host, uint16_t* port) {
  constexpr std::string_view kScheme = "ws://";
  if (url.rfind(kScheme, 0) != 0) return false;
  std::string rest = url.substr(kScheme.size());
  if (size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string digits = rest.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const unsigned long p = std::strtoul(digits.c_str(), nullptr, 10);
  if (p < 1 || p > 65535) return false;
  *host = rest.substr(0, colon);
  *port = static_cast<uint16_t>(p);
  return true;
}

}  // namespace skiff::bench
