// The bootstrap family: a new device downloads everything it may see, 10,000
// rows of ~200 bytes, from a server on the memory, SQLite and PostgreSQL
// stores, over a real WebSocket. Timed from Device::Open until the device is
// up to date (bootstrap pages, then the pull from the first page's cursor).
//
// Deterministic, per bootstrap (counted on the wire by the device's client,
// as of the moment it got up to date): rows received, requests, pushes,
// pulls, bootstraps, bytes and frames received; and, from the server's
// stats, the pages it answered from a page read ahead. Judged:
// server_cpu_us_per_op, the CPU of the in-process server's threads per
// bootstrap, and on PostgreSQL postgres_cpu_us_per_op, the CPU of its
// backends serving the server's queries (support/postgres_backends_cpu.h;
// left out, saying why, when PostgreSQL's processes are not this
// machine's). Info: device_cpu_us_per_op, the CPU of the device's own
// threads (sync loop, client I/O) per bootstrap. Together, what the two
// cores of a small machine share. Each bootstrap is checked off the clock:
// the device holds every row with its value.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "client/device.h"
#include "client/memory_storage.h"
#include "support/counters.h"
#include "support/postgres.h"
#include "support/postgres_backends_cpu.h"

#include "bench/sync_bench_common.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr uint64_t kRows = 10000;

// Adds the counters the family reports.
void Add(client::DeviceCounters& total, const client::DeviceCounters& one) {
  total.rows_received += one.rows_received;
  total.requests += one.requests;
  total.pushes += one.pushes;
  total.pulls += one.pulls;
  total.bootstraps += one.bootstraps;
  total.bytes_received += one.bytes_received;
  total.frames_received += one.frames_received;
}

// CPU of the threads started since `before` (the device's own: its sync
// loop and its client's I/O thread), all of it spent on this bootstrap.
double DeviceCpuSeconds(const std::vector<pid_t>& before) {
  double seconds = 0;
  for (pid_t tid : ThreadIds()) {
    if (!std::binary_search(before.begin(), before.end(), tid)) {
      seconds += ThreadCpuSeconds("self", tid);
    }
  }
  return seconds;
}

// The CPU of PostgreSQL's backends for a case on `kind`: nullptr, saying
// why once, when it cannot be read here.
std::unique_ptr<support::PostgresBackendsCpu> BackendsOf(const std::string& kind) {
  if (kind != "postgres") return nullptr;
  Result<support::PostgresTarget> target = support::TestPostgres();
  if (!target.ok()) return nullptr;  // the stack has already said why
  auto backends = support::PostgresBackendsCpu::Open(target->url);
  if (backends.ok()) return std::move(*backends);
  static bool said = false;
  if (!std::exchange(said, true)) {
    std::fprintf(stderr, "sync_bootstrap_bench: postgres_cpu_us_per_op not measured: %s\n",
                 backends.status().ToString().c_str());
  }
  return nullptr;
}

void BM_Bootstrap(benchmark::State& state, const std::string& kind) {
  auto stack = SyncStack::Open(state, kind);
  if (!stack) return;
  if (Status s = stack->AddUser("ann", "team"); !s.ok()) {
    return state.SkipWithError(s.ToString().c_str());
  }
  {
    auto loader = client::Client::Connect(stack->ClientFor("ann"));
    if (!loader.ok()) return state.SkipWithError(loader.status().ToString().c_str());
    auto loaded = LoadRows(**loader, "loader", "team", kRows);
    if (!loaded.ok()) return state.SkipWithError(loaded.status().ToString().c_str());
  }
  client::DeviceOptions options;
  options.port = stack->port();
  options.user = "ann";
  options.secret = stack->secret("ann");
  // The device's own page size (1,000 rows): it asks for each page while it
  // applies the one before, so the server's reading and sending overlaps the
  // device's work; one page of 10,000 rows would leave them in turn.
  const std::vector<std::string> rows = TaskRows(kRows);
  uint64_t runs = 0, incomplete = 0;
  client::DeviceCounters total;
  double server_cpu = 0, device_cpu = 0, postgres_cpu = 0;
  std::unique_ptr<support::PostgresBackendsCpu> backends = BackendsOf(kind);
  for (auto _ : state) {
    client::MemoryStorage storage;
    options.device_id = "new-device-" + std::to_string(runs);
    Result<support::PostgresBackendsCpu::Sample> backends_before =
        backends ? backends->Take() : Unavailable("not measured");
    const double server_cpu_before = stack->ServerCpuSeconds();
    const std::vector<pid_t> threads_before = ThreadIds();
    const auto start = SteadyClock::now();
    auto device = client::Device::Open(options, storage);
    if (!device.ok()) return state.SkipWithError(device.status().ToString().c_str());
    // The first time it is up to date: its first round, no extra pull.
    Status synced = (*device)->WaitUntilUpToDate(std::chrono::seconds(60));
    const auto elapsed = SteadyClock::now() - start;
    server_cpu += stack->ServerCpuSeconds() - server_cpu_before;
    device_cpu += DeviceCpuSeconds(threads_before);
    if (backends_before.ok()) {
      Result<support::PostgresBackendsCpu::Sample> after = backends->Take();
      if (!after.ok()) return state.SkipWithError(after.status().ToString().c_str());
      postgres_cpu += support::PostgresBackendsCpu::Ran(*backends_before, *after);
    } else if (backends) {
      return state.SkipWithError(backends_before.status().ToString().c_str());
    }
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
    if (!synced.ok()) return state.SkipWithError(synced.ToString().c_str());
    Add(total, (*device)->synced_counters());
    // Off the clock (manual time): this bootstrap's whole result.
    incomplete += (*device)->row_count() != kRows || RowsHeld(**device, rows) != kRows;
    ++runs;
    device->reset();  // closes the connection, off the clock
  }
  if (runs == 0) return state.SkipWithError("no bootstrap ran");
  if (incomplete > 0) {
    return state.SkipWithError((std::to_string(incomplete) + " of " + std::to_string(runs) +
                                " bootstraps left the device without every row")
                                   .c_str());
  }
  // Pages the server answered from the page it read ahead, per bootstrap
  // (9 of 10 when the device follows its pages).
  auto reader = client::Client::Connect(stack->ClientFor("ann"));
  if (!reader.ok()) return state.SkipWithError(reader.status().ToString().c_str());
  auto stats = (*reader)->CallSync({{"op", "stats"}});
  if (!stats.ok()) return state.SkipWithError(stats.status().ToString().c_str());
  const double n = double(runs);
  SetDeterministic(state, "pages_from_read_ahead",
                   (*stats)["sync"].value("pages_from_read_ahead", 0.0) / n);
  SetDeterministic(state, "rows_received", double(total.rows_received) / n);
  SetDeterministic(state, "requests", double(total.requests) / n);
  SetDeterministic(state, "pushes", double(total.pushes) / n);
  SetDeterministic(state, "pulls", double(total.pulls) / n);
  SetDeterministic(state, "bootstraps", double(total.bootstraps) / n);
  SetDeterministic(state, "bytes_received", double(total.bytes_received) / n);
  SetDeterministic(state, "frames_received", double(total.frames_received) / n);
  ReportServerCpu(state, server_cpu, runs);
  if (backends) SetJudged(state, "postgres_cpu_us_per_op", 1e6 * postgres_cpu / n);
  SetInfo(state, "device_cpu_us_per_op", 1e6 * device_cpu / n);
}

const bool kRegistered = AddRegistration([] {
  for (const std::string& kind : SelectedStores()) {
    AddCase("BM_Bootstrap10k/" + kind, [kind](benchmark::State& s) { BM_Bootstrap(s, kind); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
  }
});

}  // namespace
}  // namespace skiff::bench
