// The key-value family of the end-to-end suite: single-key reads, writes on
// unique keys, payload sizes, a mixed pipelined load, scans and a burst
// after idle, through a real server over a real WebSocket (support/stack.h)
// on each store. Every case checks what it did: reads are compared with
// what was written, acknowledged writes are read back after the run. The
// pipelined get and set also run on a skiffd child over ws:// and wss://
// side by side (.../child, .../child-tls): what TLS costs the server per
// request (tls_cpu_ratio).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/kv_workloads.h"
#include "support/rate_search.h"
#include "support/scenario.h"

namespace skiff::bench {
namespace {

// Acknowledged writes read back after a write scenario (evenly spread).
constexpr size_t kReadBackSample = 10'000;

// The same request again and again; every reply must say what `check` says.
class Repeat final : public Workload {
 public:
  Repeat(std::string body, std::function<std::string(const ReplyView&)> check)
      : body_(std::move(body)), check_(std::move(check)) {}
  bool Next(size_t, size_t, std::string& body) override {
    body += body_;
    return true;
  }
  std::string Check(size_t, size_t, const ReplyView& reply) override { return check_(reply); }

 private:
  const std::string body_;
  const std::function<std::string(const ReplyView&)> check_;
};

void HotRead(ScenarioContext& ctx, const char* op, size_t connections, size_t pipeline,
             uint64_t standard_ops) {
  HotKeyReads reads(ctx.stack().FreshTable("hot"), op);
  auto driver = ctx.Pool(connections, pipeline);
  if (!driver) return;
  if (!ctx.CallOk(*driver, reads.preload(), "preload")) return;
  ctx.Measure(*driver, reads, ctx.Ops(standard_ops));
}

// Writes on unique keys, then reads a sample of the acknowledged ones back.
void Writes(ScenarioContext& ctx, const std::string& stem, size_t connections, size_t pipeline,
            uint64_t standard_ops, std::chrono::milliseconds idle_first = {}) {
  const std::string table = ctx.stack().FreshTable(stem);
  auto driver = ctx.Pool(connections, pipeline);
  if (!driver) return;
  UniqueSets sets(table, SmallValue);
  if (idle_first.count() > 0) std::this_thread::sleep_for(idle_first);
  const RunResult& run = ctx.Measure(*driver, sets, ctx.Ops(standard_ops));
  if (sets.acked() + run.error_count() != run.ops) ctx.Fail("acknowledged writes do not add up");
  ReadBack back(table, sets.SampleAcked(kReadBackSample), SmallValue);
  if (!ctx.Untimed(*driver, back, "read-back")) return;
  SetInfo(ctx.state(), "read_back", double(back.verified()));
}

// set(key i) then get(key i) on every slot, each read compared with the write.
class SetThenGet final : public Workload {
 public:
  SetThenGet(std::string table, size_t bytes) : table_(std::move(table)), bytes_(bytes) {}
  bool Next(size_t conn, size_t slot, std::string& body) override {
    EnsureSlot(key_, conn, slot);
    EnsureSlot(phase_, conn, slot);
    if (phase_[conn][slot] == 0) {
      key_[conn][slot] = next_++;
      const uint64_t i = key_[conn][slot];
      AppendKeyOp(body, "set", table_, KeyFor(i));
      body += ",\"value\":";
      body += PayloadValue(i, bytes_);
    } else {
      AppendKeyOp(body, "get", table_, KeyFor(key_[conn][slot]));
    }
    return true;
  }
  std::string Check(size_t conn, size_t slot, const ReplyView& reply) override {
    uint64_t& phase = phase_[conn][slot];
    const uint64_t i = key_[conn][slot];
    phase ^= 1;
    if (phase == 1) return {};  // the set was acknowledged; its get comes next
    ++reads_;
    if (ReplyMember(reply.text, "found") != "true") return "written " + KeyFor(i) + " not found";
    const std::string_view got = LastReplyMember(reply.text, "value");
    bytes_read_ += got.size();
    if (!SameJson(got, PayloadValue(i, bytes_))) return "read of " + KeyFor(i) + " differs";
    return {};
  }
  void Failed(size_t conn, size_t slot, bool) override { phase_[conn][slot] = 0; }
  uint64_t reads() const { return reads_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  const std::string table_;
  const size_t bytes_;
  uint64_t next_ = 0;
  uint64_t reads_ = 0;
  uint64_t bytes_read_ = 0;
  std::vector<std::vector<uint64_t>> key_;
  std::vector<std::vector<uint64_t>> phase_;
};

void Payload(ScenarioContext& ctx, size_t bytes, uint64_t standard_ops) {
  auto driver = ctx.Pool(1, 1);
  if (!driver) return;
  SetThenGet work(ctx.stack().FreshTable("payload"), bytes);
  ctx.Measure(*driver, work, ctx.Ops(standard_ops));
  if (work.reads() == 0) return ctx.Fail("no write was read back");
  // The mean size of a value as the server sent it back, counted in the
  // replies. The reads' check lets a value through when it parses to the
  // same JSON, so a change in how the server writes values shows here only.
  SetDeterministic(ctx.state(), "read_value_bytes",
                   double(work.bytes_read()) / double(work.reads()));
}

void Mixed(ScenarioContext& ctx) {
  auto driver = ctx.Pool();
  if (!driver) return;
  MixedChain chains(ctx.stack().FreshTable("mixed"));
  ctx.Measure(*driver, chains, ctx.Ops(400'000));
  if (chains.chains() == 0) ctx.Fail("no chain of operations completed");
  SetInfo(ctx.state(), "chains", double(chains.chains()));
}

void Scan(ScenarioContext& ctx) {
  constexpr uint64_t kRows = 10'000;  // the protocol's largest page
  const std::string table = ctx.stack().FreshTable("scan");
  auto driver = ctx.Pool();
  if (!driver) return;
  UniqueSets preload(table, SmallValue);
  RunLimits preload_limits;
  preload_limits.max_ops = kRows;
  preload_limits.cap = std::chrono::seconds(600);
  RunResult loaded = driver->Run(preload, preload_limits);
  if (loaded.error_count() > 0 || preload.acked() != kRows) {
    return ctx.Fail("preload: " + loaded.first_error);
  }
  std::string expected = "[";
  for (uint64_t i = 0; i < kRows; ++i) {
    expected += i == 0 ? "{\"key\":" : ",{\"key\":";
    AppendJsonString(expected, KeyFor(i));
    expected += ",\"value\":" + SmallValue(i) + "}";
  }
  expected += "],\"next\":null";
  std::string body = "\"op\":\"all\",\"table\":";
  AppendJsonString(body, table);
  body += ",\"limit\":" + std::to_string(kRows);
  uint64_t rows_seen = 0, scans = 0;
  Repeat scan(body, [&](const ReplyView& reply) -> std::string {
    const std::string_view items = LastReplyMember(reply.text, "items");
    if (!SameJson(items, expected)) return "a scan did not return exactly the preloaded rows";
    ++scans;
    // Rows counted in the reply (one "key" member each), not assumed.
    for (size_t at = items.find("{\"key\":"); at != std::string_view::npos;
         at = items.find("{\"key\":", at + 1)) {
      ++rows_seen;
    }
    return {};
  });
  auto one = ctx.Pool(1, 1);
  if (!one) return;
  ctx.Measure(*one, scan, ctx.Ops(200));
  if (scans == 0) return ctx.Fail("no scan completed");
  SetDeterministic(ctx.state(), "rows_per_scan", double(rows_seen) / double(scans));
}

// ---- Sustainable rate ------------------------------------------------------

// The latency bound of the sustainable-rate scenarios, and the search's
// halvings (the answer is known to within the closed loop's rate / 32).
constexpr double kP99BoundUs = 10'000;
constexpr int kSearchSteps = 5;
constexpr int kConfirmationRates = 3;
// Requests a probe sends at least, time permitting: 100 beyond its p99.
constexpr double kProbeRequests = 10'000;

// How long a probe at `rate` runs (0: the closed loop): long enough for
// kProbeRequests, within the profile's bounds.
double ProbeSeconds(double rate) {
  const double shortest = ByProfile(1.0, 4.0, 8.0);
  const double longest = ByProfile(2.0, 10.0, 20.0);
  if (rate <= 0) return shortest;
  return std::clamp(kProbeRequests / rate, shortest, longest);
}

uint64_t ProbeOps(double rate) { return uint64_t(rate * ProbeSeconds(rate)) + 1; }

// One line per probe on stderr: its rate, verdict, achieved rate, p99, the
// share of its requests sent late, and why it failed or is void.
std::string ProbeLines(const RateSearch& search) {
  std::string lines;
  for (const RateProbe& p : search.probes) {
    const double n = double(std::max<uint64_t>(p.ops, 1));
    char line[160];
    std::snprintf(line, sizeof line,
                  "\n  %9.0f/s %-11s%s achieved %.0f/s, p99 %.1f ms, late %.1f %%", p.target,
                  ProbeVerdictName(p.verdict), p.repeat ? " (again)" : "", p.achieved,
                  p.p99_us / 1000, 100 * double(p.late_on_client + p.late_for_slot) / n);
    lines += line;
    if (!p.why.empty()) lines += ": " + p.why;
  }
  return lines;
}

void ReportSearch(ScenarioContext& ctx, const RateSearch& search, const RunResult* measured) {
  // Info: the case's time already judges the rate, as the measured run is
  // the one that held at it (its time per op is 1 / the rate).
  SetInfo(ctx.state(), "sustainable_ops_per_s", search.sustainable);
  SetInfo(ctx.state(), "search_ops_per_s", search.found);
  SetInfo(ctx.state(), "closed_loop_ops_per_s", search.capacity);
  SetInfo(ctx.state(), "client_limit_ops_per_s", search.client_limit);
  SetInfo(ctx.state(), "p99_bound_ms", kP99BoundUs / 1000);
  SetInfo(ctx.state(), "probes", double(search.probes.size()));
  SetInfo(ctx.state(), "void_probes", double(search.void_probes));
  SetInfo(ctx.state(), "rate_inversions", double(search.inversions));
  SetInfo(ctx.state(), "confirmation_runs", double(search.confirmation_runs));
  if (measured != nullptr) SetInfo(ctx.state(), "late_sends", double(measured->sent_late));
  const char* outcome = !search.monotonic  ? "NOT MONOTONIC"
                        : search.confirmed ? "confirmed by a run after it"
                        : search.found > 0 ? "NOT CONFIRMED: no run at or below it held"
                                           : "no probe held";
  std::fprintf(stderr, "sustainable: %.0f ops/s at p99 < %.0f ms (search %.0f, %s)",
               search.sustainable, kP99BoundUs / 1000, search.found, outcome);
  if (search.client_limit > 0) {
    std::fprintf(stderr, "; client limit at %.0f/s: no rate at or above it is claimed",
                 search.client_limit);
  }
  std::fprintf(stderr, "; probes:%s\n", ProbeLines(search).c_str());
}

// Finds the highest open-loop rate of `work` on the default pool at which
// p99 stays under kP99BoundUs with no error (support/rate_search.h), then
// measures one more probe's worth at that rate, which must hold too (else
// at 3/4 of it, three rates at most): the case's figures are those of the
// sustainable rate. No rate that held, or a search that is not monotonic,
// fails the case.
void Sustainable(ScenarioContext& ctx, LoadDriver& driver, Workload& work) {
  auto probe = [&](double rate) {
    RunLimits limits;
    // The cap leaves room past the last request's due time, so that a
    // client behind its schedule shows as late sends, not as a short run.
    limits.cap = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(ProbeSeconds(rate) * 1.25 + 0.5));
    limits.rate = rate;
    if (rate > 0) limits.max_ops = ProbeOps(rate);
    return driver.Run(work, limits);
  };
  RateSearch search = FindSustainableRate(probe, kP99BoundUs, kSearchSteps);
  if (search.mismatches > 0) return ctx.Fail("a probe got a wrong answer: " + search.first_error);
  if (search.capacity <= 0) return ctx.Fail("the closed-loop probe failed: " + search.first_error);
  const RunResult* measured = nullptr;
  ConfirmSustainableRate(
      [&](double rate) {
        measured = &ctx.Measure(driver, work, ProbeOps(rate), rate);
        return *measured;
      },
      kP99BoundUs, kConfirmationRates, &search);
  ReportSearch(ctx, search, measured);
  if (search.mismatches > 0) return ctx.Fail("a run got a wrong answer: " + search.first_error);
  if (!search.monotonic) {
    return ctx.Fail("the rates are not monotonic: " + search.inversion +
                    ", and failed again; no rate is claimed");
  }
  // Every open-loop probe that did not hold was void: the client, not the
  // server, could not keep the schedule, so this machine cannot measure
  // the rate. That is no sustainable rate to claim, and no failure of the
  // server either: the case is skipped, saying so.
  const bool only_void = std::none_of(
      search.probes.begin(), search.probes.end(),
      [](const RateProbe& p) { return p.target > 0 && p.verdict == ProbeVerdict::kFailed; });
  if (search.sustainable <= 0 && only_void && search.void_probes > 0) {
    char why[300];
    std::snprintf(why, sizeof why,
                  "skipped: the client could not keep the schedule (%d void probes, none failed; "
                  "client limit %.0f/s): no sustainable rate can be measured here; see stderr",
                  search.void_probes, search.client_limit);
    ctx.Fail(why);
    return;
  }
  if (search.sustainable <= 0) {
    char why[300];
    std::snprintf(why, sizeof why,
                  search.found > 0
                      ? "the search's %.0f/s held, but no run at or below it held again (%d void "
                        "probes: the client could not keep the schedule); see stderr"
                      : "no rate held its p99 bound without errors (closed loop %.0f/s; %d void "
                        "probes: the client could not keep the schedule); see stderr",
                  search.found > 0 ? search.found : search.capacity, search.void_probes);
    ctx.Fail(why);
  }
}

void SustainableGets(ScenarioContext& ctx) {
  HotKeyReads reads(ctx.stack().FreshTable("rate_get"), "get");
  auto driver = ctx.Pool();
  if (!driver) return;
  if (!ctx.CallOk(*driver, reads.preload(), "preload")) return;
  Sustainable(ctx, *driver, reads);
}

void SustainableSets(ScenarioContext& ctx) {
  const std::string table = ctx.stack().FreshTable("rate_set");
  auto driver = ctx.Pool();
  if (!driver) return;
  UniqueSets sets(table, SmallValue);
  Sustainable(ctx, *driver, sets);
  if (ctx.failed()) return;
  ReadBack back(table, sets.SampleAcked(kReadBackSample), SmallValue);
  if (!ctx.Untimed(*driver, back, "read-back")) return;
  SetInfo(ctx.state(), "read_back", double(back.verified()));
}

void SustainableMixed(ScenarioContext& ctx) {
  auto driver = ctx.Pool();
  if (!driver) return;
  MixedChain chains(ctx.stack().FreshTable("rate_mixed"));
  Sustainable(ctx, *driver, chains);
  if (!ctx.failed() && chains.chains() == 0) ctx.Fail("no chain of operations completed");
}

const bool kRegistered = AddRegistration([] {
  RegisterScenario({.name = "get-hot/sequential",
                    .body = [](ScenarioContext& c) { HotRead(c, "get", 1, 1, 20'000); },
                    .peer = true});
  RegisterScenario({.name = "get-hot/pipelined",
                    .body =
                        [](ScenarioContext& c) {
                          HotRead(c, "get", c.options().concurrency, c.options().pipeline, 400'000);
                        },
                    .peer = true,
                    .tls = true});
  RegisterScenario({"has/sequential", [](ScenarioContext& c) { HotRead(c, "has", 1, 1, 20'000); }});
  RegisterScenario(
      {"set-small/sequential", [](ScenarioContext& c) { Writes(c, "set_seq", 1, 1, 20'000); }});
  RegisterScenario({.name = "set-small/pipelined",
                    .body =
                        [](ScenarioContext& c) {
                          Writes(c, "set_pipe", c.options().concurrency, c.options().pipeline,
                                 400'000);
                        },
                    .peer = true,
                    .tls = true});
  RegisterScenario({"mixed-workload/pipelined", Mixed});
  RegisterScenario({"payload-1kb/set+get", [](ScenarioContext& c) { Payload(c, 1024, 10'000); }});
  RegisterScenario(
      {"payload-64kb/set+get", [](ScenarioContext& c) { Payload(c, 64 * 1024, 2'000); }});
  RegisterScenario({"payload-512kb/set+get",
                    [](ScenarioContext& c) { Payload(c, 512 * 1024, 200); }, /*full_only=*/true});
  RegisterScenario({"all-scan/preloaded", Scan});
  RegisterScenario({.name = "sustainable/get", .body = SustainableGets, .peer = true});
  RegisterScenario({.name = "sustainable/set", .body = SustainableSets, .peer = true});
  RegisterScenario({"sustainable/mixed", SustainableMixed});
  RegisterScenario({"spike-burst/idle->flood", [](ScenarioContext& c) {
                      Writes(c, "spike", c.options().concurrency, c.options().pipeline, 200'000,
                             std::chrono::milliseconds(250));
                    }});
});

}  // namespace
}  // namespace skiff::bench
