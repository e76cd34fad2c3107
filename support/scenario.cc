#include "support/scenario.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <unistd.h>

#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/process.h"
#include "support/run_facts.h"

namespace skiff::bench {
namespace {

constexpr uint64_t kMaxOps = 500'000;

// The plain and the TLS child rows of one scenario on one store: the plain
// row, registered first, leaves its server CPU per request for the TLS
// row's ratio.
struct TlsPair {
  double plain_cpu_us_per_op = 0;  // 0: the plain row measured none
};

double ServerCpuUsPerOp(const ScenarioContext& ctx) {
  const RunResult* run = ctx.measured();
  if (run == nullptr || run->ops == 0 || !ctx.server_cpu_known()) return 0;
  return 1e6 * ctx.server_cpu_seconds() / double(run->ops);
}

// What TLS costs the server per request, beside the plain row's figure.
void ReportTlsCost(benchmark::State& state, const ScenarioContext& ctx, bool tls, TlsPair& pair) {
  const double per_op = ctx.failed() ? 0 : ServerCpuUsPerOp(ctx);
  if (!tls) {
    pair.plain_cpu_us_per_op = per_op;
    return;
  }
  if (per_op <= 0 || pair.plain_cpu_us_per_op <= 0) {
    std::fprintf(stderr, "tls: no ratio (the plain child row did not run or measured nothing)\n");
    return;
  }
  const double ratio = per_op / pair.plain_cpu_us_per_op;
  SetInfo(state, "plain_server_cpu_us_per_op", pair.plain_cpu_us_per_op);
  SetInfo(state, "tls_cpu_ratio", ratio);
  std::fprintf(stderr,
               "tls: server CPU per request %.2f us over wss://, %.2f us over ws:// (x%.3f, "
               "%+.1f%%)\n",
               per_op, pair.plain_cpu_us_per_op, ratio, 100 * (ratio - 1));
}

std::string Compact(double v) {
  char buf[32];
  if (v >= 1e6) {
    snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  } else if (v >= 1e3) {
    snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  } else {
    snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

std::string ErrorBreakdown(const RunResult& run) {
  std::string out;
  for (size_t k = 0; k < run.errors.size(); ++k) {
    if (run.errors[k] == 0) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(run.errors[k]) + " " +
           ErrorKindName(static_cast<ErrorKind>(k));
  }
  return out;
}

// What the JSON context says about the end-to-end cases that ran.
void RecordTarget(const Stack& stack) {
  const E2eOptions& o = GetE2eOptions();
  const StackOptions& so = stack.options();
  support::RecordFact("skiff_e2e_target", o.Remote()          ? o.url
                                          : !so.bun.empty()   ? std::string("bun-peer")
                                          : !so.floor.empty() ? std::string("floor")
                                                              : so.server);
  support::RecordFact("skiff_durability", stack.durability());
  support::RecordFact("skiff_e2e_load", std::to_string(o.concurrency) + "x" +
                                            std::to_string(o.pipeline) + " timeout " +
                                            std::to_string(o.timeout_ms) + "ms");
}

void Report(benchmark::State& state, const std::string& name, ScenarioContext& ctx) {
  const RunResult* run = ctx.measured();
  if (run == nullptr) {
    if (!ctx.failed()) ctx.Fail("the scenario measured nothing");
    return;
  }
  const LatencySummary lat = run->latency.Summarize();
  SetInfo(state, "ops", double(run->ops));
  SetDeterministic(state, "err", double(run->error_count()));
  for (size_t k = 0; k < run->errors.size(); ++k) {
    SetDeterministic(state, std::string("err_") + ErrorKindName(static_cast<ErrorKind>(k)),
                     double(run->errors[k]));
  }
  SetInfo(state, "ops_per_s", run->wall_seconds > 0 ? double(run->ops) / run->wall_seconds : 0);
  SetInfo(state, "wall_s", run->wall_seconds);
  run->latency.Report(state);
  SetInfo(state, "capped", run->capped ? 1 : 0);
  if (run->wall_seconds > 0) {
    SetInfo(state, "client_cpu_pct", 100 * run->client_cpu_seconds / run->wall_seconds);
    if (ctx.server_cpu_known()) {
      SetInfo(state, "server_cpu_pct", 100 * ctx.server_cpu_seconds() / run->wall_seconds);
    }
  }
  // The server's CPU per reply is steadier than the wall time on a shared
  // machine (it does not count the time the server waited for the CPU), so
  // the comparer judges it beside the time; its resident set after the run
  // is judged too (in-process it includes the load driver, the same on both
  // sides of a comparison).
  if (ctx.server_cpu_known() && run->ops > 0) {
    SetJudged(state, "server_cpu_us_per_op", 1e6 * ctx.server_cpu_seconds() / double(run->ops));
  }
  // An attached server (--url) is another machine's: no RSS of it here.
  const pid_t server_pid = ctx.stack().pid() > 0      ? ctx.stack().pid()
                           : ctx.stack().in_process() ? getpid()
                                                      : -1;
  if (const int64_t rss = server_pid > 0 ? support::ResidentBytes(server_pid) : -1; rss > 0) {
    SetJudged(state, "server_rss_mib", double(rss) / (1 << 20));
  }
  std::fprintf(stderr, "result: %s", ResultLine(name, *run).c_str());
  if (run->wall_seconds > 0) {
    std::fprintf(stderr, "  [cpu client %.0f%%", 100 * run->client_cpu_seconds / run->wall_seconds);
    if (ctx.server_cpu_known()) {
      std::fprintf(stderr, " server %.0f%%", 100 * ctx.server_cpu_seconds() / run->wall_seconds);
    }
    std::fprintf(stderr, "%s]", run->capped ? ", cut by --cap" : "");
  }
  std::fprintf(stderr, "\n");
  if (lat.count == 0) ctx.Fail("no request completed: the scenario measured nothing");
  if (run->error_count() > 0) {
    ctx.Fail(std::to_string(run->error_count()) + " client errors (" + ErrorBreakdown(*run) +
             "); first: " + run->first_error);
  }
}

void RunCase(benchmark::State& state, const ScenarioSpec& spec, const std::string& full_name,
             const StackOptions& stack_options, TlsPair* pair) {
  std::fprintf(stderr, "start:  %s\n", full_name.c_str());
  auto stack = Stack::Start(stack_options);
  if (!stack.ok()) {
    SkipUnavailable(state, stack_options.store, stack.status());
    std::fprintf(stderr, "end:    %s (no stack: %s)\n", full_name.c_str(),
                 stack.status().ToString().c_str());
    return;
  }
  ScenarioContext ctx(state, **stack);
  RecordTarget(**stack);
  state.SetLabel((*stack)->store_kind() + " " + (*stack)->durability() + ", " + (*stack)->where());
  for (auto _ : state) {
    spec.body(ctx);
    // The time of the case is the time per operation: a scenario cut short
    // by --cap has the cap as its wall time whatever its speed, so the wall
    // time (counter wall_s) would hide a slowdown from any comparer.
    const RunResult* run = ctx.measured();
    state.SetIterationTime(run != nullptr && run->wall_seconds > 0 && run->ops > 0
                               ? run->wall_seconds / double(run->ops)
                               : 1e-9);
  }
  Report(state, full_name, ctx);
  if (pair != nullptr) ReportTlsCost(state, ctx, (*stack)->tls(), *pair);
  // The server's final flush is part of the run: a store error there fails it.
  if (Status stopped = (*stack)->Stop(); !stopped.ok()) {
    ctx.Fail("server stop: " + stopped.ToString());
  }
  if (ctx.failed()) state.SkipWithError(ctx.failure().c_str());
  std::fprintf(stderr, "end:    %s%s%s\n", full_name.c_str(), ctx.failed() ? ": FAILED " : "",
               ctx.failure().c_str());
}

}  // namespace

std::unique_ptr<LoadDriver> ScenarioContext::Pool(size_t connections, size_t pipeline, bool login) {
  auto driver = stack_.Connect(connections, pipeline, options().timeout(), login);
  if (!driver.ok()) {
    Fail("pool " + std::to_string(connections) + "x" + std::to_string(pipeline) + ": " +
         driver.status().ToString());
    return nullptr;
  }
  return std::move(*driver);
}

uint64_t ScenarioContext::Ops(uint64_t standard) const {
  const double scaled = std::round(double(standard) * Options().BudgetScale());
  return std::clamp<uint64_t>(static_cast<uint64_t>(scaled), 1, kMaxOps);
}

const RunResult& ScenarioContext::Measure(LoadDriver& driver, Workload& workload, uint64_t max_ops,
                                          double rate) {
  RunLimits limits;
  limits.max_ops = max_ops;
  limits.rate = rate;
  limits.cap = options().Cap();
  const std::optional<double> server_before = stack_.ServerCpuSeconds();
  run_ = driver.Run(workload, limits);
  const std::optional<double> server_after = stack_.ServerCpuSeconds();
  if (server_before && server_after) {
    server_cpu_known_ = true;
    server_cpu_ = *server_after - *server_before;
    // In-process, the process total includes the driver's own thread.
    if (stack_.in_process()) server_cpu_ = std::max(0.0, server_cpu_ - run_.client_cpu_seconds);
  }
  measured_ = true;
  return run_;
}

RunResult ScenarioContext::MeasurePart(LoadDriver& driver, Workload& workload, uint64_t max_ops) {
  RunResult total = std::move(run_);
  const bool first = !measured_;
  const double server_before = server_cpu_;
  const bool server_known_before = server_cpu_known_;
  Measure(driver, workload, max_ops);
  RunResult part = run_;
  if (!first) {
    total.ops += part.ops;
    for (size_t i = 0; i < total.errors.size(); ++i) total.errors[i] += part.errors[i];
    if (total.first_error.empty()) total.first_error = part.first_error;
    total.wall_seconds += part.wall_seconds;
    total.client_cpu_seconds += part.client_cpu_seconds;
    total.capped = total.capped || part.capped;
    total.latency.Merge(part.latency);
    run_ = std::move(total);
    server_cpu_ += server_before;
    server_cpu_known_ = server_cpu_known_ && server_known_before;
  }
  return part;
}

bool ScenarioContext::Untimed(LoadDriver& driver, Workload& workload, const char* what) {
  RunLimits limits;
  limits.cap = std::chrono::seconds(600);
  RunResult r = driver.Run(workload, limits);
  if (r.error_count() == 0) return true;
  Fail(std::string(what) + ": " + std::to_string(r.error_count()) +
       " errors; first: " + r.first_error);
  return false;
}

std::optional<std::string> ScenarioContext::CallOk(LoadDriver& driver, std::string_view body,
                                                   const char* what) {
  Result<std::string> reply = driver.Call(body);
  if (!reply.ok()) {
    Fail(std::string(what) + ": " + reply.status().ToString());
    return std::nullopt;
  }
  if (ReplyMember(*reply, "ok") != "true") {
    Fail(std::string(what) + " refused: " + *reply);
    return std::nullopt;
  }
  return *reply;
}

void ScenarioContext::Fail(const std::string& why) {
  if (failure_.empty()) failure_ = why;
}

std::string ResultLine(const std::string& name, const RunResult& run) {
  const LatencySummary lat = run.latency.Summarize();
  char buf[512];
  const double rate = run.wall_seconds > 0 ? double(run.ops) / run.wall_seconds : 0;
  snprintf(buf, sizeof buf, "%-44s %7s %4llu %7s %7.0f %7.0f %7.0f %7.0f %7.0f", name.c_str(),
           Compact(double(run.ops)).c_str(), static_cast<unsigned long long>(run.error_count()),
           Compact(rate).c_str(), lat.avg_us, lat.p50_us, lat.p95_us, lat.p99_us, lat.max_us);
  return buf;
}

void RegisterScenario(ScenarioSpec spec) {
  const E2eOptions& o = GetE2eOptions();
  if (spec.full_only && Options().profile != Profile::kFull) return;
  auto shared = std::make_shared<ScenarioSpec>(std::move(spec));
  struct Target {
    std::string name;
    StackOptions stack;
    std::shared_ptr<TlsPair> pair;
  };
  std::vector<Target> targets;
  if (o.Remote()) {
    StackOptions so;
    so.url = o.url;
    so.user = o.user;
    so.secret = o.secret;
    so.tls_ca = o.tls_ca;
    so.insecure = o.insecure;
    targets.push_back({shared->name + "/url", so, nullptr});
  } else {
    if (!shared->floor.empty()) {
      StackOptions so;
      so.floor = shared->floor;
      targets.push_back({shared->name + "/floor", so, nullptr});
    }
    for (const std::string& store : SelectedStores()) {
      StackOptions so;
      so.store = store;
      so.durability = o.durability;
      so.server = o.server;
      // Beside the Bun peer (a child process) skiffd runs as a child too,
      // so the ratio compares two servers set up alike; a child serves the
      // stores a file or a database holds.
      if (shared->peer && !o.bun.empty() && store != "memory") so.server = "child";
      so.skiffd = o.skiffd;
      so.child_flags = o.skiffd_args;
      so.drop_one_add_in = o.drop_one_add_in;
      const std::string name = shared->name + "/" + store + "/" + o.durability;
      targets.push_back({name, so, nullptr});
      if (shared->tls && o.server == "inprocess" && store != "memory") {
        auto pair = std::make_shared<TlsPair>();
        so.drop_one_add_in = 0;
        so.server = "child";
        targets.push_back({name + "/child", so, pair});
        so.server = "child-tls";
        targets.push_back({name + "/child-tls", so, pair});
      }
    }
  }
  if (shared->peer && !o.bun.empty()) {
    StackOptions so;
    so.bun = o.bun;
    targets.push_back({shared->name + "/bun-peer", so, nullptr});
  }
  for (Target& t : targets) {
    AddCase(t.name, [shared, name = t.name, so = t.stack, pair = t.pair](
                        benchmark::State& state) { RunCase(state, *shared, name, so, pair.get()); })
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace skiff::bench
