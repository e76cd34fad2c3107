// The store family: what one document costs each store, below the server.
//
// Per store (memory, SQLite file in WAL mode, PostgreSQL): write one document,
// write a batch of 100 in one transaction, read one document back, scan 10,000
// rows in pages of 1,000, and read 10,000 synced rows in pages of 1,000 as a
// bootstrap does. Statement counts are deterministic (counted by the store as
// it sends them); latencies and the document size are info; the time per op
// is judged (cpu_time is the CPU per op: the store runs on the benchmark's
// thread). Every case checks its whole result: every write is read back
// after the timed loop, every read and every scanned row is compared with
// what was written (mismatches counted in the loop, checked after it).
#include <chrono>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "store/store.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/latency.h"
#include "support/test_store.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A document of `bytes` of JSON text whose content depends on `seed`, so every
// run writes the same bytes.
std::string MakeDocument(uint64_t seed, size_t bytes) {
  std::string doc = "{\"id\":" + std::to_string(seed) + ",\"body\":\"";
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  while (doc.size() + 2 < bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    doc += static_cast<char>('a' + x % 26);
  }
  return doc + "\"}";
}

std::string Key(const char* prefix, uint64_t i) {
  char buf[32];
  snprintf(buf, sizeof buf, "%s%09llu", prefix, static_cast<unsigned long long>(i));
  return buf;
}

void Fail(benchmark::State& state, const std::string& what, const Status& s) {
  state.SkipWithError((what + ": " + s.ToString()).c_str());
}

// Table `table` holds exactly rows Key(prefix, j) = value, j < n: read
// back page by page in key order.
Status CheckTable(store::Store& store, const char* table, const char* prefix, uint64_t n,
                  const std::string& value) {
  uint64_t j = 0;
  std::string from;
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(store::ScanPage page, store.Scan(table, from, store::kMaxScanLimit));
    for (const store::KeyValue& kv : page.items) {
      if (j >= n || kv.key != Key(prefix, j) || kv.value != value) {
        return Internal("row " + std::to_string(j) + " (" + kv.key + ") is not what was written");
      }
      ++j;
    }
    if (!page.next) break;
    from = *page.next;
  }
  if (j != n) return Internal(std::to_string(n - j) + " written rows are missing");
  return Status::Ok();
}

void BM_WriteOne(benchmark::State& state, const std::string& kind) {
  auto fixture = OpenTestStore(state, kind);
  if (!fixture) return;
  store::Store& store = fixture->store();
  const std::string value = MakeDocument(1, 1024);
  const auto before = store.counters();
  LatencyRecorder latency;
  uint64_t i = 0;
  for (auto _ : state) {
    const auto start = SteadyClock::now();
    Status s = store.Put("bench", Key("w", i++), value);
    latency.Record(SteadyClock::now() - start);
    if (!s.ok()) return Fail(state, "put", s);
  }
  const auto after = store.counters();
  if (Status s = CheckTable(store, "bench", "w", i, value); !s.ok()) {
    return Fail(state, "writes not read back", s);
  }
  SetDeterministic(state, "statements_per_write",
                   double(after.statements - before.statements) / double(i));
  SetInfo(state, "value_bytes", double(value.size()));
  latency.Report(state);
  state.SetItemsProcessed(static_cast<int64_t>(i));
}

// Times only Write(batch): building the next batch happens on the clock's
// off time (manual time), so the rate is the store's, not the test's.
void BM_WriteBatch100(benchmark::State& state, const std::string& kind) {
  auto fixture = OpenTestStore(state, kind);
  if (!fixture) return;
  store::Store& store = fixture->store();
  const std::string value = MakeDocument(2, 1024);
  constexpr int kBatch = 100;
  const auto before = store.counters();
  LatencyRecorder latency;
  uint64_t batches = 0, i = 0;
  for (auto _ : state) {
    store::WriteBatch batch;
    for (int j = 0; j < kBatch; ++j) batch.Put("bench", Key("b", i++), value);
    const auto start = SteadyClock::now();
    Status s = store.Write(batch);
    const auto elapsed = SteadyClock::now() - start;
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
    latency.Record(elapsed);
    if (!s.ok()) return Fail(state, "batch", s);
    ++batches;
  }
  const auto after = store.counters();
  if (Status s = CheckTable(store, "bench", "b", i, value); !s.ok()) {
    return Fail(state, "batches not read back", s);
  }
  SetDeterministic(state, "statements_per_batch",
                   double(after.statements - before.statements) / double(batches));
  SetDeterministic(state, "transactions_per_batch",
                   double(after.transactions - before.transactions) / double(batches));
  latency.Report(state);
  state.SetItemsProcessed(static_cast<int64_t>(i));
}

// MakeDocument(i, bytes) for i < n, made before a timed loop compares with
// them.
std::vector<std::string> Documents(uint64_t n, size_t bytes) {
  std::vector<std::string> docs;
  docs.reserve(n);
  for (uint64_t i = 0; i < n; ++i) docs.push_back(MakeDocument(i, bytes));
  return docs;
}

// Documents Key(stem, i) of `bytes` each, i < n, written in one batch.
Status PreloadDocuments(store::Store& store, const char* table, const char* stem, uint64_t n,
                        size_t bytes) {
  store::WriteBatch preload;
  for (uint64_t i = 0; i < n; ++i) preload.Put(table, Key(stem, i), MakeDocument(i, bytes));
  return store.Write(preload);
}

void BM_PointRead(benchmark::State& state, const std::string& kind) {
  auto fixture = OpenTestStore(state, kind);
  if (!fixture) return;
  store::Store& store = fixture->store();
  constexpr uint64_t kDocs = 1000;
  if (Status s = PreloadDocuments(store, "bench", "r", kDocs, 1024); !s.ok()) {
    return Fail(state, "preload", s);
  }
  const std::vector<std::string> docs = Documents(kDocs, 1024);
  const auto before = store.counters();
  LatencyRecorder latency;
  uint64_t reads = 0, hits = 0, x = 12345;
  for (auto _ : state) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // seeded key order
    const uint64_t id = (x >> 33) % kDocs;
    const auto start = SteadyClock::now();
    auto value = store.Get("bench", Key("r", id));
    latency.Record(SteadyClock::now() - start);
    if (!value.ok()) return Fail(state, "get", value.status());
    ++reads;
    // A read that finds nothing measures nothing: count and check hits.
    if (value->has_value() && value->value() == docs[id]) ++hits;
    benchmark::DoNotOptimize(value);
  }
  const auto after = store.counters();
  if (hits != reads) return state.SkipWithError("a point read did not get its document");
  SetDeterministic(state, "statements_per_read",
                   double(after.statements - before.statements) / double(reads));
  latency.Report(state);
  state.SetItemsProcessed(static_cast<int64_t>(reads));
}

// What the timed scans saw, each row held against the row the scan must
// see at its place (keys[at], values[at]).
struct ScanTally {
  const std::vector<std::string>& keys;
  const std::vector<std::string>& values;
  uint64_t rows = 0, bytes = 0, wrong = 0;
  size_t at = 0;  // place in the current scan

  void See(const std::string& key, const std::string& value) {
    wrong += at >= keys.size() || key != keys[at] || value != values[at];
    ++at;
    ++rows;
    bytes += key.size() + value.size();
  }
};

// Times `scan_all` (one whole scan, each row handed to ScanTally::See) and
// reports per scan what the store counted; every scan must see exactly the
// rows keys/values, in order.
template <typename ScanAll>
void TimeScans(benchmark::State& state, store::Store& store, const std::vector<std::string>& keys,
               const std::vector<std::string>& values, ScanAll&& scan_all) {
  const auto before = store.counters();
  ScanTally tally{keys, values};
  uint64_t scans = 0;
  for (auto _ : state) {
    tally.at = 0;
    if (Status s = scan_all(tally); !s.ok()) return Fail(state, "scan", s);
    tally.wrong += tally.at != keys.size();
    ++scans;
  }
  const auto done = store.counters();
  if (tally.wrong > 0) {
    return state.SkipWithError(
        (std::to_string(tally.wrong) + " scanned rows differ from the rows written, or are missing")
            .c_str());
  }
  SetDeterministic(state, "rows_per_scan", double(tally.rows) / double(scans));
  SetDeterministic(state, "bytes_per_scan", double(tally.bytes) / double(scans));
  SetDeterministic(state, "statements_per_scan",
                   double(done.statements - before.statements) / double(scans));
  state.SetItemsProcessed(static_cast<int64_t>(tally.rows));
}

// Key(stem, i) for i < n.
std::vector<std::string> Keys(const char* stem, uint64_t n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (uint64_t i = 0; i < n; ++i) keys.push_back(Key(stem, i));
  return keys;
}

void BM_Scan10k(benchmark::State& state, const std::string& kind) {
  auto fixture = OpenTestStore(state, kind);
  if (!fixture) return;
  store::Store& store = fixture->store();
  constexpr uint64_t kRows = 10000;
  if (Status s = PreloadDocuments(store, "scan", "s", kRows, 200); !s.ok()) {
    return Fail(state, "preload", s);
  }
  const std::vector<std::string> keys = Keys("s", kRows), values = Documents(kRows, 200);
  TimeScans(state, store, keys, values, [&](ScanTally& tally) -> Status {
    std::string after;
    for (;;) {
      SKIFF_ASSIGN_OR_RETURN(store::ScanPage page, store.Scan("scan", after, 1000));
      for (const auto& kv : page.items) tally.See(kv.key, kv.value);
      if (!page.next) return Status::Ok();
      after = *page.next;
    }
  });
}

// A new device's bootstrap as the store serves it: the synced rows of its
// groups, 10,000 of ~200 bytes in one group of two, in pages of 1,000.
void BM_SyncRowScan10k(benchmark::State& state, const std::string& kind) {
  auto fixture = OpenTestStore(state, kind);
  if (!fixture) return;
  store::Store& store = fixture->store();
  constexpr uint64_t kRows = 10000;
  store::WriteBatch preload;
  for (uint64_t i = 0; i < kRows; ++i) {
    preload.AppendChange({i + 1, "team", "notes", Key("s", i), MakeDocument(i, 200)});
  }
  // A group the caller is not in, after its own in key order: the scan
  // must stop at its group's end, not read on.
  preload.AppendChange({kRows + 1, "zoo", "notes", Key("s", 0), MakeDocument(0, 200)});
  if (Status s = store.Write(preload); !s.ok()) return Fail(state, "preload", s);
  const std::vector<std::string> groups = {"other", "team"};
  const std::vector<std::string> keys = Keys("s", kRows), values = Documents(kRows, 200);
  TimeScans(state, store, keys, values, [&](ScanTally& tally) -> Status {
    store::SyncRowCursor after;
    for (;;) {
      SKIFF_ASSIGN_OR_RETURN(store::SyncRowPage page, store.ScanSyncRows(groups, after, 1000));
      for (const auto& row : page.rows) {
        // A row of another group, or the right key with another table's
        // value, is as wrong as a wrong value.
        tally.wrong += row.group != "team" || row.table != "notes";
        tally.See(row.key, row.value);
      }
      if (!page.next) return Status::Ok();
      after = *page.next;
    }
  });
}

const bool kRegistered = AddRegistration([] {
  for (const std::string& kind : SelectedStores()) {
    AddCase("BM_WriteOne/" + kind, [kind](benchmark::State& s) { BM_WriteOne(s, kind); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    AddCase("BM_WriteBatch100/" + kind, [kind](benchmark::State& s) { BM_WriteBatch100(s, kind); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    AddCase("BM_PointRead/" + kind, [kind](benchmark::State& s) { BM_PointRead(s, kind); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    AddCase("BM_Scan10k/" + kind, [kind](benchmark::State& s) { BM_Scan10k(s, kind); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    AddCase("BM_SyncRowScan10k/" + kind,
            [kind](benchmark::State& s) { BM_SyncRowScan10k(s, kind); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
