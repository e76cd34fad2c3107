// The push throughput family: pushes per second with one device and with
// sixteen devices at once, per store. Each device is its own connection and
// pushes one row at a time, waiting for each reply (a push is acknowledged
// after its commit), as a device's sync loop does. Sixteen devices share the
// engine's commits; the ratio to one device says how far that carries
// (Ferry: about 2x on PostgreSQL, bounded by its counter-row lock).
//
// Info: pushes_per_s, and for 16 devices ratio_to_one_device (against the
// one-device case of the same store in this process). Deterministic: rows
// the server applied per push (from its replies). Judged:
// server_cpu_us_per_op, the CPU of the in-process server's threads per push.
// After the timed loop the change log must hold every row once, and the
// synced rows every pushed row with its value.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "support/bench_options.h"
#include "support/counters.h"

#include "bench/sync_bench_common.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

// The one-device rate of each store, for the 16-device case's ratio.
std::map<std::string, double>& OneDeviceRates() {
  static std::map<std::string, double> rates;
  return rates;
}

// Every row each device pushed (seqs[d] of them) is a synced row of "team"
// with its value, and there is no other.
Status CheckPushedRows(store::Store& store, const std::vector<uint64_t>& seqs) {
  std::map<std::string, std::string> want;
  for (size_t d = 0; d < seqs.size(); ++d) {
    for (uint64_t seq = 1; seq <= seqs[d]; ++seq) {
      want["device-" + std::to_string(d) + "-" + RowKey(seq)] = TaskRow(seq);
    }
  }
  return CheckSyncRows(store, "team", want).status();
}

void BM_PushThroughput(benchmark::State& state, const std::string& kind, int devices) {
  auto stack = SyncStack::Open(state, kind);
  if (!stack) return;
  if (Status s = stack->AddUser("ann", "team"); !s.ok()) {
    return state.SkipWithError(s.ToString().c_str());
  }
  std::vector<std::unique_ptr<client::Client>> clients;
  for (int d = 0; d < devices; ++d) {
    auto c = client::Client::Connect(stack->ClientFor("ann"));
    if (!c.ok()) return state.SkipWithError(c.status().ToString().c_str());
    clients.push_back(std::move(*c));
  }
  // Pushes per device per iteration: enough that thread start-up is small.
  const int per_device = std::max(4, 64 / devices);
  std::vector<uint64_t> seqs(static_cast<size_t>(devices), 0);
  std::atomic<uint64_t> failures{0}, applied{0};
  uint64_t total = 0;
  double seconds = 0;
  const double server_cpu_before = stack->ServerCpuSeconds();
  for (auto _ : state) {
    const auto start = SteadyClock::now();
    std::vector<std::thread> threads;
    for (int d = 0; d < devices; ++d) {
      threads.emplace_back([&, d] {
        uint64_t& seq = seqs[static_cast<size_t>(d)];
        const std::string device = "device-" + std::to_string(d);
        for (int i = 0; i < per_device; ++i) {
          ++seq;
          const client::SyncChange change{
              seq, {"team", "tasks", device + "-" + RowKey(seq)}, SortedTaskRow(seq)};
          auto reply = clients[static_cast<size_t>(d)]->Push({device, {&change, 1}});
          if (!reply.ok()) {
            failures.fetch_add(1);
            continue;
          }
          applied.fetch_add(reply->applied);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    seconds += std::chrono::duration<double>(SteadyClock::now() - start).count();
    total += static_cast<uint64_t>(devices * per_device);
  }
  const double server_cpu = stack->ServerCpuSeconds() - server_cpu_before;
  if (failures.load() > 0) return state.SkipWithError("a push failed");
  if (applied.load() != total) return state.SkipWithError("a push did not apply its row");
  auto log = stack->store().LastSyncId();
  if (!log.ok() || *log != total) return state.SkipWithError("the log does not hold every push");
  if (Status s = CheckPushedRows(stack->store(), seqs); !s.ok()) {
    return state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
  const double rate = double(total) / seconds;
  SetInfo(state, "pushes_per_s", rate);
  SetDeterministic(state, "rows_per_push", double(applied.load()) / double(total));
  ReportServerCpu(state, server_cpu, total);
  if (devices == 1) {
    OneDeviceRates()[kind] = rate;
  } else if (auto one = OneDeviceRates().find(kind); one != OneDeviceRates().end()) {
    SetInfo(state, "ratio_to_one_device", rate / one->second);
  }
}

const bool kRegistered = AddRegistration([] {
  for (const std::string& kind : SelectedStores()) {
    for (int devices : {1, 16}) {
      AddCase("BM_PushThroughput/" + kind + "/devices:" + std::to_string(devices),
              [kind, devices](benchmark::State& s) { BM_PushThroughput(s, kind, devices); })
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
});

}  // namespace
}  // namespace skiff::bench
