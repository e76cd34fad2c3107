// The server write family: SQL statements the store runs for one write, over
// the real server and WebSocket, per store (memory counts none).
//
//   BM_ServerWrite: a v1 `set` of a new ~200-byte document.
//   BM_PushFirst:   a push of one row by a device the server has never seen
//                   (it reads the device's record once).
//   BM_PushOne:     a later push of one row by the same device.
//
// Statements are counted by the store as it sends them (deterministic);
// requests go one at a time, so no two share a transaction. Judged:
// server_cpu_us_per_op, the CPU of the in-process server's threads per
// write. After the timed loop each case reads every write back from the
// store: each document, or each synced row, with its value.
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "support/counters.h"
#include "support/latency.h"

#include "bench/sync_bench_common.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Setup {
  std::unique_ptr<SyncStack> stack;
  std::unique_ptr<client::Client> client;
};

Setup Prepare(benchmark::State& state, const std::string& kind) {
  Setup s;
  s.stack = SyncStack::Open(state, kind);
  if (!s.stack) return s;
  Status added = s.stack->AddUser("ann", "team");
  if (added.ok()) {
    // Table permissions for the `set` case.
    added = server::SetPermissions(s.stack->store(), "ann", server::Permissions({"*"}, {"*"}));
  }
  if (!added.ok()) {
    state.SkipWithError(added.ToString().c_str());
    s.stack.reset();
    return s;
  }
  auto c = client::Client::Connect(s.stack->ClientFor("ann"));
  if (!c.ok()) {
    state.SkipWithError(c.status().ToString().c_str());
    s.stack.reset();
    return s;
  }
  s.client = std::move(*c);
  return s;
}

client::SyncChange ChangeOf(uint64_t seq, uint64_t row) {
  return {seq, {"team", "tasks", RowKey(row)}, SortedTaskRow(row)};
}

// The table "docs" holds exactly documents RowKey(j) = TaskRow(j), j < n,
// read back page by page in key order.
Status CheckDocs(store::Store& store, uint64_t n) {
  uint64_t j = 0;
  std::string from;
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(store::ScanPage page, store.Scan("docs", from, store::kMaxScanLimit));
    for (const store::KeyValue& kv : page.items) {
      if (j >= n || kv.key != RowKey(j) || !SameDocument(kv.value, TaskRow(j))) {
        return Internal("write " + std::to_string(j) + " does not read back: " + kv.key);
      }
      ++j;
    }
    if (!page.next) break;
    from = *page.next;
  }
  if (j != n) return Internal(std::to_string(n - j) + " writes are missing from the store");
  return Status::Ok();
}

void BM_ServerWrite(benchmark::State& state, const std::string& kind) {
  Setup s = Prepare(state, kind);
  if (!s.stack) return;
  const auto before = s.stack->store().counters();
  const double server_cpu_before = s.stack->ServerCpuSeconds();
  LatencyRecorder latency;
  uint64_t i = 0;
  for (auto _ : state) {
    doc::Value request = {{"op", "set"},
                          {"table", "docs"},
                          {"key", RowKey(i)},
                          {"value", doc::Value::parse(TaskRow(i))}};
    const auto start = SteadyClock::now();
    auto reply = s.client->CallSync(request);
    latency.Record(SteadyClock::now() - start);
    if (!reply.ok()) return state.SkipWithError(reply.status().ToString().c_str());
    ++i;
  }
  const auto after = s.stack->store().counters();
  const double server_cpu = s.stack->ServerCpuSeconds() - server_cpu_before;
  if (Status checked = CheckDocs(s.stack->store(), i); !checked.ok()) {
    return state.SkipWithError(checked.ToString().c_str());
  }
  SetDeterministic(state, "statements_per_write",
                   double(after.statements - before.statements) / double(i));
  ReportServerCpu(state, server_cpu, i);
  latency.Report(state);
  state.SetItemsProcessed(static_cast<int64_t>(i));
}

// `first`: every push comes from a new device; otherwise one device pushes
// again and again (after a first push outside the measurement).
void BM_Push(benchmark::State& state, const std::string& kind, bool first) {
  Setup s = Prepare(state, kind);
  if (!s.stack) return;
  uint64_t seq = 0, row = 0;
  if (!first) {
    const client::SyncChange change = ChangeOf(++seq, row++);
    auto warm = s.client->Push({"steady", {&change, 1}});
    if (!warm.ok()) return state.SkipWithError(warm.status().ToString().c_str());
  }
  const auto before = s.stack->store().counters();
  const double server_cpu_before = s.stack->ServerCpuSeconds();
  LatencyRecorder latency;
  uint64_t pushes = 0, applied = 0, cursor = 0;
  for (auto _ : state) {
    const std::string device = first ? "device-" + std::to_string(pushes) : "steady";
    const client::SyncChange change = first ? ChangeOf(1, row++) : ChangeOf(++seq, row++);
    const auto start = SteadyClock::now();
    auto reply = s.client->Push({device, {&change, 1}});
    latency.Record(SteadyClock::now() - start);
    if (!reply.ok()) return state.SkipWithError(reply.status().ToString().c_str());
    applied += reply->applied;
    cursor = reply->cursor;
    ++pushes;
  }
  const auto after = s.stack->store().counters();
  const double server_cpu = s.stack->ServerCpuSeconds() - server_cpu_before;
  if (applied != pushes) return state.SkipWithError("a push did not apply its row");
  // Each row got its own sync id: the cursor counts every row pushed.
  auto log = s.stack->store().LastSyncId();
  if (cursor != row || !log.ok() || *log != row) {
    return state.SkipWithError("the change log does not hold every pushed row");
  }
  std::map<std::string, std::string> want;
  for (uint64_t r = 0; r < row; ++r) want[RowKey(r)] = TaskRow(r);
  if (auto synced = CheckSyncRows(s.stack->store(), "team", want); !synced.ok()) {
    return state.SkipWithError(synced.status().ToString().c_str());
  }
  SetDeterministic(state, first ? "statements_per_first_push" : "statements_per_push",
                   double(after.statements - before.statements) / double(pushes));
  ReportServerCpu(state, server_cpu, pushes);
  latency.Report(state);
  state.SetItemsProcessed(static_cast<int64_t>(pushes));
}

const bool kRegistered = AddRegistration([] {
  for (const std::string& kind : SelectedStores()) {
    AddCase("BM_ServerWrite/" + kind, [kind](benchmark::State& s) { BM_ServerWrite(s, kind); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    AddCase("BM_PushFirst/" + kind, [kind](benchmark::State& s) { BM_Push(s, kind, true); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    AddCase("BM_PushOne/" + kind, [kind](benchmark::State& s) { BM_Push(s, kind, false); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
});

}  // namespace
}  // namespace skiff::bench
