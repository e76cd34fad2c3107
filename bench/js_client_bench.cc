// The TypeScript client family: kv_bench's scenarios through the client of
// src/js (its Node entry, src/js/dist/node.js) under Node and under Bun,
// beside the C++ load driver (support/load_driver.h, as kv_bench drives
// the server) in the same run, so the ratio of each runtime to C++ reads
// off one run:
//
//   set-small/pipelined/sqlite/<runtime>        16 x 32 in flight, unique keys,
//                                               a sample read back after
//   get-hot/sequential/sqlite/<runtime>         one get at a time on one document
//   mixed-workload/pipelined/sqlite/<runtime>   16 x 32 chains of set, get, has,
//                                               add, get, delete, has
//   mixed-workload/pipelined/long/sqlite/<runtime>
//                                               the mixed chains for 5 min
//                                               (full), 60 s (standard), 4 s
//                                               (quick); the rate in its first
//                                               and its last tenth
//
// The long run looks for a client that slows down as it runs (a leak of
// calls, timers or listeners, a queue that grows) while the server keeps
// answering quickly. It runs the mixed chains, which delete every key they
// write, so the table stays small and the server's work per request stays
// the same from the first tenth to the last. Its last_vs_first_rate (the
// last tenth's rate over the first's) is a judged counter, higher is
// better; it is not a checked invariant: on this 2-core machine a tenth
// moves by more than the 0.9 goal when other processes take a CPU, which
// the cxx case of the same shape shows apart from the client. The quick
// profile's first tenth (0.4 s) is also the JIT's warm-up.
//
// Every case starts its own skiffd child process on a fresh SQLite store
// (support/stack.h). A JavaScript case runs bench/js/kv_driver.mjs as a
// child (support/js_runner.h), which does the measured work, checks every
// reply and reads the written rows back, and prints its figures; the case
// takes its time (per operation, manual time, as kv_bench) from the
// driver's own clock. A case fails when a request failed, a reply was
// wrong or the rows read back are not all there. A missing runtime or an
// unbuilt package skips the case with the reason ("skipped: ...", listed
// by the verdict, not a failure), as connections_bench treats a missing
// peer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/e2e_options.h"
#include "support/js_runner.h"
#include "support/kv_workloads.h"
#include "support/process.h"
#include "support/stack.h"

namespace skiff::bench {
namespace {

// Acknowledged writes read back after a write scenario, as kv_bench.
constexpr size_t kReadBackSample = 10'000;
// The long run's goal: its last tenth at no less than this share of the
// rate of its first (reported, not checked: see LongRun).
constexpr double kLongRunFloor = 0.9;

enum class Scenario { kSetSmall, kGetHot, kMixed, kLong };

struct Shape {
  std::string name;
  Scenario scenario;
  bool pipelined;
  uint64_t standard_ops;
};

// What one case measured, from either client.
struct Figures {
  uint64_t ops = 0;
  uint64_t errors = 0;
  uint64_t mismatches = 0;
  std::string first_error;
  double elapsed_s = 0;
  LatencySummary latency;
  uint64_t rows_checked = 0;
  uint64_t rows_expected = 0;
  double client_cpu_s = 0;
  double server_cpu_s = 0;
  double heap_bytes = -1;  // the JavaScript heap after a collection
  uint64_t requests = 0;   // frames sent in the measured part
  double bytes_sent = -1, bytes_received = -1;
  uint64_t chains = 0;
  std::vector<double> tenths;  // completions per tenth (long run)
  double tenth_s = 0;
  std::string runtime_version;
};

uint64_t OpsOf(uint64_t standard) {
  return std::clamp<uint64_t>(uint64_t(double(standard) * Options().BudgetScale()), 1, 500'000);
}

double LongSeconds() { return ByProfile(4.0, 60.0, 300.0); }

// ---- The C++ client ----------------------------------------------------------

// Counts `inner`'s replies per tenth of a run of `seconds`, from its first
// request: the long run's rate at its start and at its end.
class PerTenth final : public Workload {
 public:
  PerTenth(Workload& inner, double seconds)
      : inner_(inner), span_(std::chrono::duration<double>(seconds)), counts_(10, 0) {}
  bool Next(size_t conn, size_t slot, std::string& body) override {
    if (!started_) start_ = std::chrono::steady_clock::now(), started_ = true;
    return inner_.Next(conn, slot, body);
  }
  std::string Check(size_t conn, size_t slot, const ReplyView& reply) override {
    Count();
    return inner_.Check(conn, slot, reply);
  }
  void Failed(size_t conn, size_t slot, bool refused) override {
    Count();
    inner_.Failed(conn, slot, refused);
  }
  const std::vector<double>& counts() const { return counts_; }

 private:
  void Count() {
    const double at = (std::chrono::steady_clock::now() - start_) / span_;
    if (at >= 0 && at < 1) counts_[size_t(at * 10)] += 1;
  }
  Workload& inner_;
  const std::chrono::duration<double> span_;
  std::vector<double> counts_;
  std::chrono::steady_clock::time_point start_;
  bool started_ = false;
};

void Take(Figures& f, const RunResult& run) {
  f.ops = f.requests = run.ops;
  f.errors = run.error_count() - run.errors_of(ErrorKind::kMismatch);
  f.mismatches = run.errors_of(ErrorKind::kMismatch);
  f.first_error = run.first_error;
  f.elapsed_s = run.wall_seconds;
  f.latency = run.latency.Summarize();
  f.client_cpu_s = run.client_cpu_seconds;
}

Result<Figures> RunCxx(Stack& stack, const Shape& shape, size_t connections, size_t pipeline) {
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<LoadDriver> driver,
                         stack.Connect(connections, pipeline, GetE2eOptions().timeout()));
  Figures f;
  RunLimits limits;
  limits.max_ops = OpsOf(shape.standard_ops);
  limits.cap = std::chrono::seconds(600);
  const std::string table = stack.FreshTable("js_cmp");
  const double cpu0 = stack.ServerCpuSeconds().value_or(0);
  if (shape.scenario == Scenario::kSetSmall) {
    UniqueSets sets(table, SmallValue);
    Take(f, driver->Run(sets, limits));
    f.server_cpu_s = stack.ServerCpuSeconds().value_or(0) - cpu0;
    ReadBack back(table, sets.SampleAcked(kReadBackSample), SmallValue);
    RunResult checked = driver->Run(back, RunLimits{.cap = std::chrono::seconds(600)});
    f.rows_expected = std::min<uint64_t>(sets.acked(), kReadBackSample);
    f.rows_checked = back.verified();
    if (checked.error_count() > 0 && f.first_error.empty()) f.first_error = checked.first_error;
  } else if (shape.scenario == Scenario::kGetHot) {
    HotKeyReads reads(table, "get");
    SKIFF_ASSIGN_OR_RETURN(std::string preloaded, driver->Call(reads.preload()));
    if (ReplyMember(preloaded, "ok") != "true") return Unavailable("preload: " + preloaded);
    Take(f, driver->Run(reads, limits));
    f.server_cpu_s = stack.ServerCpuSeconds().value_or(0) - cpu0;
    // HotKeyReads compares every reply with the document written.
    f.rows_checked = f.ops - f.errors - f.mismatches;
    f.rows_expected = limits.max_ops;
  } else if (shape.scenario == Scenario::kMixed) {
    MixedChain chains(table);
    Take(f, driver->Run(chains, limits));
    f.server_cpu_s = stack.ServerCpuSeconds().value_or(0) - cpu0;
    f.chains = f.rows_checked = f.rows_expected = chains.chains();
  } else {
    MixedChain chains(table);
    PerTenth timed(chains, LongSeconds());
    limits.max_ops = UINT64_MAX;
    limits.cap = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(LongSeconds()));
    Take(f, driver->Run(timed, limits));
    f.server_cpu_s = stack.ServerCpuSeconds().value_or(0) - cpu0;
    f.tenths = timed.counts();
    f.tenth_s = LongSeconds() / 10;
    f.chains = f.rows_checked = f.rows_expected = chains.chains();
  }
  return f;
}

// ---- A JavaScript runtime --------------------------------------------------

const char* ScenarioKey(Scenario s) {
  switch (s) {
    case Scenario::kSetSmall:
      return "set-small";
    case Scenario::kGetHot:
      return "get-hot";
    case Scenario::kMixed:
      return "mixed";
    case Scenario::kLong:
      return "mixed-long";
  }
  return "";
}

Result<Figures> RunJs(Stack& stack, const std::string& runtime, const Shape& shape,
                      size_t connections, size_t pipeline) {
  nlohmann::json config = {
      {"client", SourcePath("src/js/dist/node.js")},
      {"url", "ws://127.0.0.1:" + std::to_string(stack.port()) + "/"},
      {"user", stack.user()},
      {"secret", stack.secret()},
      {"table", stack.FreshTable("js_" + runtime)},
      {"scenario", ScenarioKey(shape.scenario)},
      {"ops", OpsOf(shape.standard_ops)},
      {"connections", connections},
      {"inflight", pipeline},
      {"seconds", LongSeconds()},
      {"read_back", kReadBackSample},
      {"timeout_ms", GetE2eOptions().timeout_ms},
  };
  const std::string driver = SourcePath("bench/js/kv_driver.mjs");
  std::vector<std::string> argv;
  if (runtime == "bun") {
    argv = {BunPath(), driver, config.dump()};
  } else {
    argv = {NodePath(), "--expose-gc", driver, config.dump()};
  }
  double cpu_start = 0, server_cpu = 0;
  auto mark = [&](const std::string& line) {
    if (line == "measure start") cpu_start = stack.ServerCpuSeconds().value_or(0);
    if (line == "measure end") server_cpu = stack.ServerCpuSeconds().value_or(0) - cpu_start;
  };
  const auto budget =
      std::chrono::seconds(shape.scenario == Scenario::kLong ? int(LongSeconds()) + 120
                                                             : int(ByProfile(120, 600, 1200)));
  SKIFF_ASSIGN_OR_RETURN(nlohmann::json out, RunJsDriver(argv, {}, budget, mark));
  Figures f;
  try {
    f.ops = out.at("ops").get<uint64_t>();
    f.errors = out.at("errors").get<uint64_t>();
    f.mismatches = out.at("mismatches").get<uint64_t>();
    f.first_error = out.at("first_error").get<std::string>();
    f.elapsed_s = out.at("elapsed_ns").get<double>() * 1e-9;
    const nlohmann::json& lat = out.at("latency_us");
    f.latency = {lat.at("count").get<uint64_t>(), lat.at("avg").get<double>(),
                 lat.at("p50").get<double>(),     lat.at("p95").get<double>(),
                 lat.at("p99").get<double>(),     lat.at("max").get<double>()};
    f.rows_checked = out.at("rows_checked").get<uint64_t>();
    f.rows_expected = out.at("rows_expected").get<uint64_t>();
    f.client_cpu_s = out.at("cpu_us").get<double>() * 1e-6;
    f.heap_bytes = out.at("heap_bytes").get<double>();
    f.chains = out.value("chains", uint64_t{0});
    f.runtime_version = runtime + " " + out.at("runtime_version").get<std::string>();
    if (out.contains("tenths")) {
      f.tenths = out.at("tenths").get<std::vector<double>>();
      f.tenth_s = out.at("tenth_seconds").get<double>();
    }
    // Requests as counted on the wire (frames the client sent in the
    // measured part) must be the driver's count of answered calls.
    const nlohmann::json& wire = out.at("wire");
    f.requests = wire.at("frames_sent").get<uint64_t>();
    f.bytes_sent = wire.at("bytes_sent").get<double>();
    f.bytes_received = wire.at("bytes_received").get<double>();
    if (f.requests != f.ops || out.at("requests").get<uint64_t>() != f.ops) {
      return Internal("the driver timed " + std::to_string(f.ops) + " calls, counted " +
                      out.at("requests").dump() + " and sent " + std::to_string(f.requests) +
                      " frames");
    }
  } catch (const nlohmann::json::exception& e) {
    return Internal(std::string("the driver's result lacks a figure: ") + e.what());
  }
  f.server_cpu_s = server_cpu;
  return f;
}

// ---- Reporting ---------------------------------------------------------------

// C++ figures by scenario, for the ratios on the runtimes' cases (registered
// after it).
std::map<std::string, Figures>& CxxFigures() {
  static std::map<std::string, Figures> figures;
  return figures;
}

double PerSecond(double n, double s) { return s > 0 ? n / s : 0; }

void Report(benchmark::State& state, const Shape& shape, const std::string& runtime,
            const Figures& f) {
  const double ops = double(std::max<uint64_t>(f.ops, 1));
  SetInfo(state, "ops", double(f.ops));
  SetInfo(state, "ops_per_s", PerSecond(double(f.ops), f.elapsed_s));
  SetInfo(state, "wall_s", f.elapsed_s);
  SetDeterministic(state, "err", double(f.errors + f.mismatches));
  SetInfo(state, "avg_us", f.latency.avg_us);
  SetInfo(state, "p50_us", f.latency.p50_us);
  SetInfo(state, "p95_us", f.latency.p95_us);
  SetInfo(state, "p99_us", f.latency.p99_us);
  SetInfo(state, "max_us", f.latency.max_us);
  // What a change to a client makes worse first: its CPU per request.
  SetJudged(state, "client_cpu_us_per_op", 1e6 * f.client_cpu_s / ops);
  SetJudged(state, "server_cpu_us_per_op", 1e6 * f.server_cpu_s / ops);
  if (f.heap_bytes >= 0) SetInfo(state, "heap_mib", f.heap_bytes / (1 << 20));
  if (f.bytes_sent >= 0) {
    SetInfo(state, "bytes_sent_per_op", f.bytes_sent / ops);
    SetInfo(state, "bytes_received_per_op", f.bytes_received / ops);
  }
  switch (shape.scenario) {
    case Scenario::kSetSmall:
      SetDeterministic(state, "requests", double(f.requests));
      SetDeterministic(state, "rows_read_back", double(f.rows_checked));
      break;
    case Scenario::kGetHot:
      SetDeterministic(state, "requests", double(f.requests));
      SetDeterministic(state, "reads_checked", double(f.rows_checked));
      break;
    case Scenario::kMixed:
      // How many chains completed depends on how the slots interleave.
      SetDeterministic(state, "requests", double(f.requests));
      SetInfo(state, "chains", double(f.chains));
      break;
    case Scenario::kLong:
      SetInfo(state, "chains", double(f.chains));
      break;
  }
  if (runtime == "cxx") {
    CxxFigures()[shape.name] = f;
  } else if (auto it = CxxFigures().find(shape.name); it != CxxFigures().end()) {
    const Figures& c = it->second;
    SetInfo(state, "ops_per_s_vs_cxx",
            PerSecond(double(f.ops), f.elapsed_s) / PerSecond(double(c.ops), c.elapsed_s));
    SetInfo(state, "client_cpu_per_op_vs_cxx",
            (f.client_cpu_s / ops) / (c.client_cpu_s / double(std::max<uint64_t>(c.ops, 1))));
  }
  std::fprintf(stderr, "result: %-44s %8.0f ops/s p50 %6.0f us p99 %6.0f us client %5.1f us/op\n",
               (shape.name + "/sqlite/" + runtime).c_str(), PerSecond(double(f.ops), f.elapsed_s),
               f.latency.p50_us, f.latency.p99_us, 1e6 * f.client_cpu_s / ops);
}

// The long run's start and end. Their ratio is judged (higher is better),
// not checked: on this kind of machine a tenth of a minute moves by more
// than the floor with other processes' load, which the cxx case of the
// same shape shows apart from the client (last_vs_first_vs_cxx).
std::string LongRun(benchmark::State& state, const Shape& shape, const std::string& runtime,
                    const Figures& f) {
  if (f.tenths.size() != 10 || f.tenth_s <= 0) return "the driver reported no tenths";
  const double first = f.tenths.front() / f.tenth_s, last = f.tenths.back() / f.tenth_s;
  SetInfo(state, "first_tenth_ops_per_s", first);
  SetInfo(state, "last_tenth_ops_per_s", last);
  if (first <= 0) return "no request completed in the first tenth of the run";
  const double ratio = last / first;
  SetJudged(state, "last_vs_first_rate", ratio, Better::kHigher);
  if (auto it = CxxFigures().find(shape.name); runtime != "cxx" && it != CxxFigures().end()) {
    const std::vector<double>& c = it->second.tenths;
    if (c.size() == 10 && c.front() > 0 && c.back() > 0) {
      SetInfo(state, "last_vs_first_vs_cxx", ratio / (c.back() / c.front()));
    }
  }
  std::fprintf(stderr, "long run %s: first tenth %.0f/s, last %.0f/s: %.2f of it%s\n",
               runtime.c_str(), first, last, ratio,
               ratio >= kLongRunFloor ? ""
               : runtime == "cxx"     ? " (below 0.9: the rate fell)"
                                      : " (below 0.9: the rate fell; see the cxx case)");
  return "";
}

void RunCase(benchmark::State& state, const Shape& shape, const std::string& runtime) {
  if (runtime != "cxx") {
    if (std::string missing = JsMissing(runtime, "node.js"); !missing.empty()) {
      std::fprintf(stderr, "js_client_bench: *** %s: %s; skipped ***\n", runtime.c_str(),
                   missing.c_str());
      return state.SkipWithError(("skipped: " + missing).c_str());
    }
  }
  StackOptions options;
  options.store = "sqlite";
  options.server = "child";
  options.skiffd = GetE2eOptions().skiffd;
  options.child_flags = GetE2eOptions().skiffd_args;
  auto stack = Stack::Start(options);
  if (!stack.ok()) return SkipUnavailable(state, options.store, stack.status());
  const size_t connections = shape.pipelined ? GetE2eOptions().concurrency : 1;
  const size_t pipeline = shape.pipelined ? GetE2eOptions().pipeline : 1;
  const std::string setup =
      "child skiffd, sqlite, " + std::to_string(connections) + "x" + std::to_string(pipeline);
  Result<Figures> figures = Internal("not run");
  for (auto _ : state) {
    figures = runtime == "cxx" ? RunCxx(**stack, shape, connections, pipeline)
                               : RunJs(**stack, runtime, shape, connections, pipeline);
    // The time per operation, as kv_bench reports it.
    const bool timed = figures.ok() && figures->ops > 0 && figures->elapsed_s > 0;
    state.SetIterationTime(timed ? figures->elapsed_s / double(figures->ops) : 1e-9);
  }
  if (!figures.ok()) return state.SkipWithError(figures.status().ToString().c_str());
  const Figures& f = *figures;
  state.SetLabel((f.runtime_version.empty() ? "C++ load driver" : f.runtime_version) + ", " +
                 setup);
  Report(state, shape, runtime, f);
  std::string why;
  if (f.ops == 0) why = "no request completed";
  if (why.empty() && f.errors + f.mismatches > 0) {
    why = std::to_string(f.errors) + " failed and " + std::to_string(f.mismatches) +
          " wrong replies; first: " + f.first_error;
  }
  if (why.empty() && (f.rows_expected == 0 || f.rows_checked != f.rows_expected)) {
    why = "checked " + std::to_string(f.rows_checked) + " rows of " +
          std::to_string(f.rows_expected) + (f.first_error.empty() ? "" : ": " + f.first_error);
  }
  if (why.empty() && shape.scenario == Scenario::kLong) why = LongRun(state, shape, runtime, f);
  if (Status stopped = (*stack)->Stop(); why.empty() && !stopped.ok()) {
    why = "server stop: " + stopped.ToString();
  }
  if (!why.empty()) state.SkipWithError(why.c_str());
}

const bool kRegistered = AddRegistration([] {
  const std::vector<Shape> shapes = {
      {"set-small/pipelined", Scenario::kSetSmall, true, 400'000},
      {"get-hot/sequential", Scenario::kGetHot, false, 20'000},
      {"mixed-workload/pipelined", Scenario::kMixed, true, 400'000},
  };
  for (const Shape& shape : shapes) {
    for (const std::string runtime : {"cxx", "node", "bun"}) {
      AddCase(shape.name + "/sqlite/" + runtime,
              [shape, runtime](benchmark::State& s) { RunCase(s, shape, runtime); })
          ->Iterations(1)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  const Shape long_run{"mixed-workload/pipelined/long", Scenario::kLong, true, 0};
  for (const std::string runtime : {"cxx", "node", "bun"}) {
    AddCase(long_run.name + "/sqlite/" + runtime,
            [long_run, runtime](benchmark::State& s) { RunCase(s, long_run, runtime); })
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
});

}  // namespace
}  // namespace skiff::bench
