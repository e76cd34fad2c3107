// Options of the end-to-end families (bench/kv_bench.cc and friends): load
// shape, budgets, target server. Flags are taken from the suite's main through
// support/flag_hooks.h; environment variables give defaults.
//
//   --concurrency=N   connections in the pool (16)
//   --pipeline=N      requests in flight per connection (32)
//   --timeout=MS      per-request timeout (10000)
//   --cap=MS          wall-time budget per scenario (25000 x profile scale)
//   --durability=commit|memory   for servers this process starts (commit)
//   --server=inprocess|child     start skiffd in this process or as a child
//   --url=ws://HOST:PORT --user=NAME --secret=HEX  use a running server
//                     (SKIFF_URL, SKIFF_USER, SKIFF_SECRET)
//   --bun=PATH        also run the peer-compared scenarios against a
//                     minimal Bun server (bench/peers/kv_peer.ts); env
//                     SKIFF_BENCH_BUN
//   SKIFF_BENCH_SKIP  comma-separated scenario names not to run
// Each flag's default also comes from the environment (flags win):
// SKIFF_BENCH_CONCURRENCY, SKIFF_BENCH_PIPELINE, SKIFF_BENCH_TIMEOUT_MS,
// SKIFF_BENCH_CAP_MS, SKIFF_BENCH_DURABILITY, SKIFF_BENCH_SERVER.
//   --test-drop-one-add-in=N  test only: the in-process server acknowledges
//                     one add in N without applying it (proves the verdict)
//
// Written once while main parses flags, then only read: safe from any thread.
#ifndef SKIFF_SUPPORT_E2E_OPTIONS_H_
#define SKIFF_SUPPORT_E2E_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

namespace skiff::bench {

struct E2eOptions {
  size_t concurrency = 16;
  size_t pipeline = 32;
  std::chrono::milliseconds timeout{10000};
  std::chrono::milliseconds cap{0};  // 0 = 25 s x the profile's scale
  std::string durability = "commit";
  std::string server = "inprocess";
  std::string url;
  std::string user;
  std::string secret;
  std::string bun;
  std::set<std::string> skip;
  uint32_t drop_one_add_in = 0;

  // The per-scenario budget after the profile's scale.
  std::chrono::nanoseconds Cap() const;
  bool Skipped(const std::string& scenario) const { return skip.count(scenario) > 0; }
  bool Remote() const { return !url.empty(); }
};

const E2eOptions& GetE2eOptions();

// Host and port of a ws://HOST:PORT[/] url; false when it is not one.
bool ParseWsUrl(const std::string& url, std::string* host, uint16_t* port);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_E2E_OPTIONS_H_
