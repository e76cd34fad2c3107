// The device family: opening an app whose rows are already on the device,
// until the Device is ready (rows, outbox and cursor loaded and served from
// memory), and applying a page of pulled rows to its storage. Memory,
// SQLite and LMDB storages, 10,000 and 100,000 rows of ~200 bytes.
//
// Deterministic: rows each open loaded (as the device counts them), storage
// statements to open (SQLite reads in 3 statements whatever the row count;
// LMDB counts its calls, one cursor step per key: rows + 2 with an empty
// outbox; memory runs none); rows and storage statements per page applied.
// Info: heap bytes per 10,000 rows held by the open device. Each open is
// checked off the clock (manual time): every row is there with its value;
// the case fails after the loop if one was not. Pages are checked after the
// loop: the last page is applied once more and read back.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "client/device.h"
#include "client/lmdb_storage.h"
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

// A storage of `kind` ("memory", "sqlite", "lmdb"); the file ones at `path`.
Result<std::unique_ptr<client::DeviceStorage>> OpenStorage(const std::string& kind,
                                                           const std::string& path) {
  if (kind == "memory") return std::unique_ptr<client::DeviceStorage>(new client::MemoryStorage());
  if (kind == "sqlite") {
    SKIFF_ASSIGN_OR_RETURN(auto s, client::SqliteStorage::Open(path));
    return std::unique_ptr<client::DeviceStorage>(std::move(s));
  }
  SKIFF_ASSIGN_OR_RETURN(auto s, client::LmdbStorage::Open(path));
  return std::unique_ptr<client::DeviceStorage>(std::move(s));
}

// A storage of `kind` holding `rows` rows, opened anew after the fill for
// the file ones, as an app start does (what the filling handle cached does
// not carry over; the OS's file cache does, for both file storages).
Result<std::unique_ptr<client::DeviceStorage>> FilledStorage(const std::string& kind,
                                                             const std::string& path,
                                                             uint64_t rows) {
  SKIFF_ASSIGN_OR_RETURN(auto storage, OpenStorage(kind, path));
  SKIFF_RETURN_IF_ERROR(Fill(*storage, rows));
  if (kind == "memory") return storage;
  storage.reset();
  return OpenStorage(kind, path);
}

void BM_DeviceOpen(benchmark::State& state, const std::string& kind, uint64_t rows) {
  support::TempDir dir;
  auto filled = FilledStorage(kind, dir.File("device.db"), rows);
  if (!filled.ok()) return state.SkipWithError(filled.status().ToString().c_str());
  std::unique_ptr<client::DeviceStorage> storage = std::move(*filled);
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

// The page of `page` new rows after the first `rows`: values when `set`,
// deletes otherwise.
std::vector<client::RowWrite> Page(uint64_t rows, uint64_t page, bool set) {
  std::vector<client::RowWrite> writes;
  writes.reserve(page);
  for (uint64_t i = rows; i < rows + page; ++i) {
    writes.push_back({{"team", "tasks", RowKey(i)},
                      set ? std::optional<std::string>(TaskRow(i)) : std::nullopt});
  }
  return writes;
}

// One pulled page of `page` new rows applied to a storage of `rows` rows:
// the storage's transaction alone (rows and cursor), as the device's
// thread runs it. Off the clock, the page is deleted again, so every
// iteration applies it to the same `rows`.
void BM_ApplyPage(benchmark::State& state, const std::string& kind, uint64_t rows, uint64_t page) {
  support::TempDir dir;
  auto filled = FilledStorage(kind, dir.File("device.db"), rows);
  if (!filled.ok()) return state.SkipWithError(filled.status().ToString().c_str());
  std::unique_ptr<client::DeviceStorage> storage = std::move(*filled);
  const std::vector<client::RowWrite> set = Page(rows, page, true);
  const std::vector<client::RowWrite> unset = Page(rows, page, false);
  client::SyncPosition position;
  position.bootstrapped = true;
  position.bootstrap_cursor = rows;
  uint64_t pages = 0, statements = 0;
  for (auto _ : state) {
    position.cursor = rows + pages + 1;
    const uint64_t before = storage->statements();
    const auto start = SteadyClock::now();
    Status applied = storage->ApplyRemote(set, position);
    const auto elapsed = SteadyClock::now() - start;
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
    statements += storage->statements() - before;
    if (!applied.ok()) return state.SkipWithError(applied.ToString().c_str());
    if (Status s = storage->ApplyRemote(unset, position); !s.ok()) {
      return state.SkipWithError(s.ToString().c_str());
    }
    ++pages;
  }
  if (pages == 0) return state.SkipWithError("no page applied");
  // The page lands whole, with its values, beside the rows already there.
  if (Status s = storage->ApplyRemote(set, position); !s.ok()) {
    return state.SkipWithError(s.ToString().c_str());
  }
  Result<client::StoredState> stored = storage->Load();
  if (!stored.ok()) return state.SkipWithError(stored.status().ToString().c_str());
  // The page's keys sort after the rows already there, in page order.
  const std::string first = RowKey(rows);
  uint64_t held = 0;
  for (const client::StoredRow& row : stored->rows) {
    held += row.name.key >= first && row.value == TaskRow(rows + held);
  }
  if (stored->rows.size() != rows + page || held != page ||
      stored->position.cursor != position.cursor) {
    return state.SkipWithError((kind + ": the page applied is not what the storage holds (" +
                                std::to_string(held) + " of " + std::to_string(page) + " rows)")
                                   .c_str());
  }
  SetDeterministic(state, "rows_per_page", double(page));
  SetDeterministic(state, "storage_statements_per_page", double(statements) / double(pages));
  state.SetItemsProcessed(static_cast<int64_t>(pages * page));
}

const bool kRegistered = AddRegistration([] {
  std::vector<int64_t> sizes = {10000};
  if (Options().profile != Profile::kQuick) sizes.push_back(100000);
  for (const char* kind : {"memory", "sqlite", "lmdb"}) {
    for (int64_t rows : sizes) {
      AddCase("BM_DeviceOpen/storage:" + std::string(kind) + "/rows:" + std::to_string(rows),
              [kind = std::string(kind), rows](benchmark::State& s) {
                BM_DeviceOpen(s, kind, static_cast<uint64_t>(rows));
              })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  // A pulled page of the device's default size (DeviceOptions::page).
  constexpr int64_t kPage = 1000;
  for (const char* kind : {"memory", "sqlite", "lmdb"}) {
    AddCase(
        "BM_ApplyPage/storage:" + std::string(kind) + "/rows:10000/page:" + std::to_string(kPage),
        [kind = std::string(kind)](benchmark::State& s) { BM_ApplyPage(s, kind, 10000, kPage); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
