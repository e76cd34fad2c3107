#include "support/e2e_options.h"

#include <cstdlib>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>

#include "support/bench_options.h"
#include "support/suite_options.h"

namespace skiff::bench {

std::chrono::nanoseconds E2eOptions::Cap() const {
  if (cap_ms > 0) return std::chrono::milliseconds(cap_ms);
  return std::chrono::nanoseconds(static_cast<int64_t>(25e9 * Options().BudgetScale()));
}

bool E2eOptions::Skipped(const std::string& scenario) const { return SkipRequested(scenario); }

const E2eOptions& GetE2eOptions() { return GetSuiteOptions().e2e; }

bool ParseWsUrl(const std::string& url, std::string* host, uint16_t* port, bool* tls) {
  constexpr std::string_view kPlain = "ws://";
  constexpr std::string_view kTls = "wss://";
  const bool secure = url.rfind(kTls, 0) == 0;
  if (!secure && url.rfind(kPlain, 0) != 0) return false;
  std::string rest = url.substr(secure ? kTls.size() : kPlain.size());
  if (size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string name = rest.substr(0, colon);
  if (name.front() == '[') {
    if (name.size() < 3 || name.back() != ']') return false;
    name = name.substr(1, name.size() - 2);
  } else if (name.find(':') != std::string::npos) {
    return false;  // an IPv6 address needs its brackets
  }
  const std::string digits = rest.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const unsigned long p = std::strtoul(digits.c_str(), nullptr, 10);
  if (p < 1 || p > 65535) return false;
  *host = std::move(name);
  *port = static_cast<uint16_t>(p);
  if (tls != nullptr) *tls = secure;
  return true;
}

void AddE2eTlsFlags(CLI::App& app, E2eOptions& e2e, const std::string& group) {
  app.add_option("--tls-ca", e2e.tls_ca,
                 "wss:// --url: PEM file of the roots its certificate must chain to (default: the "
                 "system store); the certificate must name the url's host")
      ->envname("SKIFF_TLS_CA")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_flag("--insecure", e2e.insecure,
               "tests only: accept any certificate from a wss:// --url, unchecked")
      ->group(group);
}

}  // namespace skiff::bench
