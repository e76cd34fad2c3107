// The bootstrap family: a new device downloads everything it may see, 10,000
// rows of ~200 bytes, from a server on the memory, SQLite and PostgreSQL
// stores, over a real WebSocket. Timed from Device::Open until the device is
// up to date (bootstrap pages, then the pull from the first page's cursor).
//
// Deterministic (counted on the wire by the device's client, as of the
// moment it got up to date): rows received, requests, pushes, pulls,
// bootstraps, bytes received; and, from the server's stats, the pages per
// bootstrap it answered from a page read ahead. Each run checks the device
// holds every row.
#include <chrono>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "client/device.h"
#include "client/memory_storage.h"
#include "support/counters.h"

#include "bench/sync_bench_common.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr uint64_t kRows = 10000;

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
  uint64_t runs = 0;
  client::DeviceCounters counters;
  size_t rows_held = 0;
  for (auto _ : state) {
    client::MemoryStorage storage;
    options.device_id = "new-device-" + std::to_string(runs);
    const auto start = SteadyClock::now();
    auto device = client::Device::Open(options, storage);
    if (!device.ok()) return state.SkipWithError(device.status().ToString().c_str());
    // The first time it is up to date: its first round, no extra pull.
    Status synced = (*device)->WaitUntilUpToDate(std::chrono::seconds(60));
    const auto elapsed = SteadyClock::now() - start;
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
    if (!synced.ok()) return state.SkipWithError(synced.ToString().c_str());
    counters = (*device)->synced_counters();
    rows_held = (*device)->row_count();
    ++runs;
    device->reset();  // closes the connection, off the clock
  }
  if (rows_held != kRows) return state.SkipWithError("the new device lacks rows");
  // Pages the server answered from the page it read ahead, per bootstrap
  // (9 of 10 when the device follows its pages).
  auto reader = client::Client::Connect(stack->ClientFor("ann"));
  if (!reader.ok()) return state.SkipWithError(reader.status().ToString().c_str());
  auto stats = (*reader)->CallSync({{"op", "stats"}});
  if (!stats.ok()) return state.SkipWithError(stats.status().ToString().c_str());
  const double from_read_ahead = (*stats)["sync"].value("pages_from_read_ahead", 0.0);
  SetDeterministic(state, "pages_from_read_ahead",
                   runs == 0 ? 0.0 : from_read_ahead / double(runs));
  SetDeterministic(state, "rows_received", double(counters.rows_received));
  SetDeterministic(state, "requests", double(counters.requests));
  SetDeterministic(state, "pushes", double(counters.pushes));
  SetDeterministic(state, "pulls", double(counters.pulls));
  SetDeterministic(state, "bootstraps", double(counters.bootstraps));
  SetDeterministic(state, "bytes_received", double(counters.bytes_received));
  SetDeterministic(state, "frames_received", double(counters.frames_received));
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
