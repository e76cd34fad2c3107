// Options of the end-to-end families (bench/kv_bench.cc and friends): load
// shape, budgets, target server. They are rows of the suite's options table
// (support/suite_options.h), which also gives each its environment variable
// and help text; this is the end-to-end families' view of them.
//
// Written once while main parses flags, then only read: safe from any thread.
#ifndef SKIFF_SUPPORT_E2E_OPTIONS_H_
#define SKIFF_SUPPORT_E2E_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace skiff::bench {

struct E2eOptions {
  size_t concurrency = 16;  // connections of the pipelined and contended cases
  size_t pipeline = 32;     // requests in flight per connection
  uint64_t timeout_ms = 10000;
  uint64_t cap_ms = 0;  // 0 = 25 s x the profile's scale
  std::string durability = "commit";
  std::string server = "inprocess";  // inprocess | child | child-tls
  std::string url;                   // ws:// or wss://
  std::string user;
  std::string secret;
  // wss:// --url: the PEM roots its certificate must chain to (empty: the
  // system store); `insecure` (tests only) accepts any certificate.
  std::string tls_ca;
  bool insecure = false;
  std::string bun;
  // A skiffd binary to start instead of the one built with the suite, and
  // flags added to a skiffd child's command line.
  std::string skiffd;
  std::vector<std::string> skiffd_args;
  uint32_t drop_one_add_in = 0;  // test only

  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(timeout_ms); }
  // The per-scenario budget after the profile's scale.
  std::chrono::nanoseconds Cap() const;
  // True when --skip names this scenario (support/suite_options.h).
  bool Skipped(const std::string& scenario) const;
  bool Remote() const { return !url.empty(); }
};

const E2eOptions& GetE2eOptions();

// Host and port of a ws://HOST:PORT[/] or wss://HOST:PORT[/] url (an IPv6
// host in brackets, returned without them), and in `tls` (when given)
// whether it was wss://; false when it is not one.
bool ParseWsUrl(const std::string& url, std::string* host, uint16_t* port, bool* tls = nullptr);

// The suite's TLS flags for a wss:// --url (--tls-ca, --insecure), added to
// the end-to-end options' group of the command line.
void AddE2eTlsFlags(CLI::App& app, E2eOptions& e2e, const std::string& group);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_E2E_OPTIONS_H_
