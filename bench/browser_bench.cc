// The browser family: the device of src/js (src/js/src/device) in headless
// Chromium on IndexedDB storage, against a skiffd child process, driven by
// bench/js/browser_driver.mjs (Node + puppeteer-core) through the device's
// own page (src/js/test/browser/device_page.*, its window.skiffBench):
//
//   BM_BrowserBootstrap10k  a new device downloads 10,000 rows of ~200 bytes
//                           into IndexedDB, until it is up to date
//   BM_BrowserOpen10k       an app start: the device opens from IndexedDB
//                           (offline) on a fresh page, until it is ready;
//                           and the JavaScript heap the open device holds
//                           per 10,000 rows (Chromium's figure after a GC)
//   BM_BrowserPush          writes from the page (one put each on its own
//                           row) until the server confirmed every one
//
// Every figure is timed on the page's clock and checked: the device holds
// every row with its value after the bootstrap and after each open, and
// the server holds every row pushed (read back through the TypeScript
// client). IndexedDB transactions and requests are counted by the device's
// storage. A missing Node, Chromium, puppeteer-core, page or unbuilt
// package skips the case with the reason ("skipped: ...", listed by the
// verdict, not a failure), as connections_bench treats a missing peer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "server/permissions.h"
#include "server/users.h"
#include "store/store.h"
#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/e2e_options.h"
#include "support/js_runner.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"

namespace skiff::bench {
namespace {

constexpr uint64_t kRows = 10'000;

// Opens timed per case, each on a fresh page.
int Opens() { return ByProfile(3, 10, 20); }
// Writes of the push case.
int Writes() { return ByProfile(1000, 5000, 10000); }
// How long a driver run may take, Chromium's start and the 10,000 rows'
// load included.
std::chrono::seconds Budget() { return std::chrono::seconds(ByProfile(120, 300, 600)); }

// One driver run on a fresh skiffd: the object it printed, or the reason
// the case failed (after SkipWithError).
std::optional<nlohmann::json> RunPhase(benchmark::State& state, const std::string& phase) {
  std::string missing = JsMissing("chromium", "device/index.js");
  const std::string page = SourcePath("src/js/test/browser/device_page.mjs");
  if (missing.empty() && access(page.c_str(), R_OK) != 0) missing = "no device page at " + page;
  if (!missing.empty()) {
    std::fprintf(stderr, "browser_bench: *** %s; skipped ***\n", missing.c_str());
    state.SkipWithError(("skipped: " + missing).c_str());
    return std::nullopt;
  }
  // skiffd on a fresh SQLite file with a user of its own in the group the
  // rows are synced in, made before it starts (it reads groups at login,
  // and one skiffd owns the file while it runs).
  support::TempDir dir;
  const std::string url = "sqlite:" + dir.File("browser.db");
  std::string secret;
  {
    Result<std::unique_ptr<store::Store>> store = store::OpenStore(url);
    Result<std::string> made =
        store.ok() ? server::CreateUser(**store, "ann", server::Permissions({"*"}, {"*"}))
                   : Result<std::string>(store.status());
    Status joined = made.ok() ? server::CreateGroup(**store, "team") : made.status();
    if (joined.ok()) joined = server::GrantGroup(**store, "ann", "team");
    if (!joined.ok()) {
      state.SkipWithError(joined.ToString().c_str());
      return std::nullopt;
    }
    secret = *made;
  }
  std::vector<std::string> flags = {"--store", url, "--io-threads", "1"};
  for (const std::string& a : GetE2eOptions().skiffd_args) flags.push_back(a);
  support::SkiffdProcess skiffd;
  const std::string binary =
      GetE2eOptions().skiffd.empty() ? std::string(SKIFFD_PATH) : GetE2eOptions().skiffd;
  if (Status started = skiffd.Start(binary, flags); !started.ok()) {
    state.SkipWithError(started.ToString().c_str());
    return std::nullopt;
  }
  const nlohmann::json config = {
      {"js", SourcePath("src/js")},
      {"chromium", ChromiumPath()},
      {"url", "ws://127.0.0.1:" + std::to_string(skiffd.port()) + "/"},
      {"user", "ann"},
      {"secret", secret},
      {"rows", kRows},
      {"phase", phase},
      {"opens", Opens()},
      {"writes", Writes()},
      {"timeout_ms", 60000},
      // The driver closes Chromium itself before this process gives up on it.
      {"deadline_ms", (Budget() - std::chrono::seconds(20)).count() * 1000},
  };
  Result<nlohmann::json> out = RunJsDriver(
      {NodePath(), SourcePath("bench/js/browser_driver.mjs"), config.dump()}, {}, Budget());
  // skiffd's exit status is its final flush: part of the run.
  if (Status stopped = skiffd.Stop(); out.ok() && !stopped.ok()) out = stopped;
  if (!out.ok()) {
    state.SkipWithError(out.status().ToString().c_str());
    return std::nullopt;
  }
  state.SetLabel("headless " + out->value("chromium", std::string("Chromium")) +
                 ", IndexedDB, child skiffd on sqlite");
  return std::move(*out);
}

// True when `r` says the device held every row with its value; false
// after SkipWithError.
bool AllRows(benchmark::State& state, const nlohmann::json& r, uint64_t checked, const char* what) {
  const uint64_t size = r.at("rows").get<uint64_t>();
  if (size == kRows && checked == kRows) return true;
  const std::string why = std::string(what) + ": the device holds " + std::to_string(size) +
                          " rows, " + std::to_string(checked) + " of " + std::to_string(kRows) +
                          " with the value written";
  state.SkipWithError(why.c_str());
  return false;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void BM_BrowserBootstrap10k(benchmark::State& state) {
  std::optional<nlohmann::json> out;
  for (auto _ : state) {
    out = RunPhase(state, "bootstrap");
    if (!out) return;
    state.SetIterationTime(out->at("bootstrap").at("ms").get<double>() / 1000);
  }
  const nlohmann::json& b = out->at("bootstrap");
  if (!AllRows(state, b, b.at("rows_checked").get<uint64_t>(), "after the bootstrap")) return;
  SetDeterministic(state, "rows_received", b.at("rowsReceived").get<double>());
  SetDeterministic(state, "bootstraps", b.at("bootstraps").get<double>());
  SetDeterministic(state, "bytes_received", b.at("bytesReceived").get<double>());
  SetDeterministic(state, "idb_transactions", b.at("idbTransactions").get<double>());
  SetDeterministic(state, "idb_requests", b.at("idbRequests").get<double>());
}

void BM_BrowserOpen10k(benchmark::State& state) {
  std::optional<nlohmann::json> out;
  std::vector<nlohmann::json> opens, heaps;
  for (auto _ : state) {
    out = RunPhase(state, "open");
    if (!out) return;
    opens = out->at("opens").get<std::vector<nlohmann::json>>();
    heaps = out->at("heaps").get<std::vector<nlohmann::json>>();
    std::vector<double> ms;
    for (const nlohmann::json& o : opens) ms.push_back(o.at("ms").get<double>());
    // The median open: one slow start of the page's modules does not move it.
    state.SetIterationTime(Median(ms) / 1000);
    if (!ms.empty()) SetInfo(state, "ms_first_open", ms.front());
  }
  if (opens.empty() || heaps.empty()) return state.SkipWithError("no open ran");
  for (const nlohmann::json& o : opens) {
    const uint64_t wrong = o.at("mismatches").get<uint64_t>();
    if (!AllRows(state, o, wrong > kRows ? 0 : kRows - wrong, "after an open")) return;
  }
  // Every open of the same rows must cost the same, or one figure would
  // hide which.
  const nlohmann::json& first = opens.front();
  for (const nlohmann::json& o : opens) {
    if (o.at("idbTransactions") != first.at("idbTransactions") ||
        o.at("idbRequests") != first.at("idbRequests")) {
      return state.SkipWithError("two opens of the same rows cost different IndexedDB work");
    }
  }
  SetDeterministic(state, "idb_transactions_per_open", first.at("idbTransactions").get<double>());
  SetDeterministic(state, "idb_requests_per_open", first.at("idbRequests").get<double>());
  SetDeterministic(state, "rows_loaded", first.at("rows").get<double>());
  SetInfo(state, "opens", double(opens.size()));
  std::vector<double> per_10k;
  for (const nlohmann::json& h : heaps) {
    if (h.at("rows").get<uint64_t>() != kRows) {
      return state.SkipWithError("the heap's open did not hold every row");
    }
    per_10k.push_back(h.at("bytesPer10kRows").get<double>());
  }
  if (Median(per_10k) <= 0) return state.SkipWithError("the open device's heap was not measured");
  SetJudged(state, "heap_mib_per_10k_rows", Median(per_10k) / (1 << 20));
}

void BM_BrowserPush(benchmark::State& state) {
  std::optional<nlohmann::json> out;
  for (auto _ : state) {
    out = RunPhase(state, "push");
    if (!out) return;
    state.SetIterationTime(out->at("push").at("ms").get<double>() / 1000);
  }
  const nlohmann::json& p = out->at("push");
  const double writes = double(Writes());
  const double pushed = p.at("changesPushed").get<double>();
  state.SetItemsProcessed(int64_t(pushed));
  SetInfo(state, "writes_per_s", pushed / (p.at("ms").get<double>() / 1000));
  SetInfo(state, "pushes", p.at("pushes").get<double>());
  SetInfo(state, "push_idb_transactions", p.at("idbTransactions").get<double>());
  SetDeterministic(state, "changes_pushed", pushed);
  SetDeterministic(state, "rows_read_back", p.at("rows_checked").get<double>());
  if (pushed != writes || p.at("rows_checked").get<double>() != writes) {
    state.SkipWithError(("the page pushed " + std::to_string(int64_t(pushed)) + " of " +
                         std::to_string(Writes()) + " writes and the server holds " +
                         p.at("rows_checked").dump() + " of them as written")
                            .c_str());
  }
}

const bool kRegistered = AddRegistration([] {
  auto once = [](benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  };
  once(AddCase("BM_BrowserBootstrap10k/indexeddb", BM_BrowserBootstrap10k));
  once(AddCase("BM_BrowserOpen10k/indexeddb", BM_BrowserOpen10k));
  once(AddCase("BM_BrowserPush/indexeddb", BM_BrowserPush));
});

}  // namespace
}  // namespace skiff::bench
