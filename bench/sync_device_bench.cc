// The device family: opening an app whose rows are already on the device,
// until the Device is ready (rows, outbox and cursor loaded and served from
// memory). Memory and SQLite storages, 10,000 and 100,000 rows of ~200 bytes.
//
// Deterministic: rows each open loaded (as the device counts them), storage
// statements to open (SQLite reads in 3 statements whatever the row count;
// memory runs none). Info: heap bytes per 10,000 rows held by the open
// device. Each open is checked off the clock (manual time): every row is
// there with its value; the case fails after the loop if one was not.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "client/device.h"
#include "client/memory_storage.h"
#include "client/sqlite_storage.h"
#include "support/bench_options.h"
#include "support/counters.h"
#include "support/temp_dir.h"

#include "bench/sync_bench_common.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Fills `storage` with `rows` rows in one transaction, as a finished
// bootstrap would have left them.
Status Fill(client::DeviceStorage& storage, uint64_t rows) {
  std::vector<client::RowWrite> writes;
  writes.reserve(rows);
  for (uint64_t i = 0; i < rows; ++i) {
    writes.push_back({{"team", "tasks", RowKey(i)}, TaskRow(i)});
  }
  client::SyncPosition position;
  position.cursor = rows;
  position.bootstrapped = true;
  position.bootstrap_cursor = rows;
  return storage.ApplyRemote(writes, position);
}

void BM_DeviceOpen(benchmark::State& state, const std::string& kind, uint64_t rows) {
  support::TempDir dir;
  std::unique_ptr<client::DeviceStorage> storage;
  const std::string path = dir.File("device.db");
  if (kind == "memory") {
    storage = std::make_unique<client::MemoryStorage>();
  } else {
    auto opened = client::SqliteStorage::Open(path);
    if (!opened.ok()) return state.SkipWithError(opened.status().ToString().c_str());
    storage = std::move(*opened);
  }
  if (Status s = Fill(*storage, rows); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  if (kind == "sqlite") {
    // Open from a cold handle, as an app start does (the statement cache
    // and page cache of the filling handle do not carry over).
    storage.reset();
    auto reopened = client::SqliteStorage::Open(path);
    if (!reopened.ok()) return state.SkipWithError(reopened.status().ToString().c_str());
    storage = std::move(*reopened);
  }
  client::DeviceOptions options;
  options.sync = false;  // the device alone: no server in this family
  const std::vector<std::string> expected = TaskRows(rows);
  uint64_t opens = 0, statements = 0, loaded = 0, incomplete = 0;
  double heap_delta = 0;
  for (auto _ : state) {
    const double heap_before = HeapBytes();
    const uint64_t before = storage->statements();
    const auto start = SteadyClock::now();
    auto device = client::Device::Open(options, *storage);
    const auto elapsed = SteadyClock::now() - start;
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
    if (!device.ok()) return state.SkipWithError(device.status().ToString().c_str());
    statements += storage->statements() - before;
    heap_delta += HeapBytes() - heap_before;
    loaded += (*device)->row_count();
    incomplete += RowsHeld(**device, expected) != rows;
    ++opens;
    device->reset();  // off the clock (manual time)
  }
  if (opens == 0) return state.SkipWithError("no open ran");
  if (incomplete > 0 || loaded != rows * opens) {
    return state.SkipWithError((std::to_string(incomplete) + " of " + std::to_string(opens) +
                                " opens did not load every row with its value")
                                   .c_str());
  }
  SetDeterministic(state, "rows_loaded", double(loaded) / double(opens));
  SetDeterministic(state, "storage_statements_per_open", double(statements) / double(opens));
  SetInfo(state, "heap_mb_per_10k_rows",
          heap_delta / double(opens) / double(rows) * 10000.0 / (1024.0 * 1024.0));
}

const bool kRegistered = AddRegistration([] {
  std::vector<int64_t> sizes = {10000};
  if (Options().profile != Profile::kQuick) sizes.push_back(100000);
  for (const char* kind : {"memory", "sqlite"}) {
    for (int64_t rows : sizes) {
      AddCase("BM_DeviceOpen/storage:" + std::string(kind) + "/rows:" + std::to_string(rows),
              [kind = std::string(kind), rows](benchmark::State& s) {
                BM_DeviceOpen(s, kind, static_cast<uint64_t>(rows));
              })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
});

}  // namespace
}  // namespace skiff::bench
