// Scenarios of the end-to-end suite as Google Benchmark cases.
//
// RegisterScenario(name, body) registers one case per target: every store
// chosen with --store at the --durability chosen (name/store/durability),
// or the one server named by --url (name/url). A scenario marked `tls` also
// runs on a skiffd child over ws:// and over wss://, side by side
// (name/store/durability/child and .../child-tls); the TLS row reports its
// server CPU per request over the plain row's (tls_cpu_ratio). Each case runs exactly once
// (one iteration; the scenario bounds itself by op count and --cap) and
// uses manual time: the wall time of its one measured run. Around the body
// the harness starts the Stack, prints progress on stderr, and afterwards
// sets the result counters (ops, err, ops_per_s, latency percentiles, the
// CPU the client and the server used), prints the result line
//   scenario ops err ops/s avgµs p50µs p95µs p99µs maxµs
// and turns any client error, broken invariant or mismatched read into
// state.SkipWithError, which fails the family's verdict.
//
// Not thread-safe: a context belongs to the benchmark thread running it.
#ifndef SKIFF_SUPPORT_SCENARIO_H_
#define SKIFF_SUPPORT_SCENARIO_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <benchmark/benchmark.h>

#include "support/e2e_options.h"
#include "support/load_driver.h"
#include "support/stack.h"

namespace skiff::bench {

class ScenarioContext {
 public:
  ScenarioContext(benchmark::State& state, Stack& stack) : state_(state), stack_(stack) {}

  Stack& stack() { return stack_; }
  const E2eOptions& options() const { return GetE2eOptions(); }
  benchmark::State& state() { return state_; }

  // A pool; nullptr after Fail() when it cannot be had.
  std::unique_ptr<LoadDriver> Pool(size_t connections, size_t pipeline, bool login = true);
  // The default pool shape: --concurrency x --pipeline.
  std::unique_ptr<LoadDriver> Pool() { return Pool(options().concurrency, options().pipeline); }

  // `standard` ops scaled by the profile, at least 1 and at most 500,000.
  uint64_t Ops(uint64_t standard) const;

  // The measured run: `max_ops` requests at most, within --cap; open-loop
  // at `rate` requests per second when it is above 0. Call once.
  const RunResult& Measure(LoadDriver& driver, Workload& workload, uint64_t max_ops,
                           double rate = 0);
  // The measured run in parts, for a scenario that alternates its requests
  // with another measurement: each call runs up to `max_ops` requests
  // (within --cap) and adds them to the one result; returns the part's own.
  // Use instead of Measure.
  RunResult MeasurePart(LoadDriver& driver, Workload& workload, uint64_t max_ops);
  // An unmeasured run (preload, read-back): any error fails the case.
  bool Untimed(LoadDriver& driver, Workload& workload, const char* what);
  // One request whose reply must be ok; nullopt (after Fail) otherwise.
  std::optional<std::string> CallOk(LoadDriver& driver, std::string_view body, const char* what);

  // Records a broken invariant or failed step; the case errors at the end.
  void Fail(const std::string& why);
  bool failed() const { return !failure_.empty(); }

  // For the harness.
  const std::string& failure() const { return failure_; }
  const RunResult* measured() const { return measured_ ? &run_ : nullptr; }
  double server_cpu_seconds() const { return server_cpu_; }
  bool server_cpu_known() const { return server_cpu_known_; }

 private:
  benchmark::State& state_;
  Stack& stack_;
  RunResult run_;
  bool measured_ = false;
  double server_cpu_ = 0;
  bool server_cpu_known_ = false;
  std::string failure_;
};

using ScenarioBody = std::function<void(ScenarioContext&)>;

struct ScenarioSpec {
  std::string name;  // "get-hot/sequential"
  ScenarioBody body;
  bool full_only = false;  // runs with --profile=full only
  // Also run against the Bun peer when --bun is given (name/bun-peer).
  bool peer = false;
  // Also run on a child over ws:// and wss:// (see above) when the suite
  // runs in-process servers; not on the memory store, which a child cannot
  // open.
  bool tls = false;
  // The floor peer's binary (bench/peers/floor_echo.cc): the scenario runs
  // on it first (name/floor) where the suite starts its servers, so the
  // rows after it can be held to it.
  std::string floor = {};
};

// Registers the scenario for every target (see above); call from a function
// handed to AddRegistration. Honours SKIFF_BENCH_SKIP.
void RegisterScenario(ScenarioSpec spec);

// "get-hot/sequential 5.0k 0 21.3k 46 44 60 80 210" (counts with k/M).
std::string ResultLine(const std::string& name, const RunResult& run);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_SCENARIO_H_
