#include "support/crash_loop.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "client/client.h"
#include "client/device.h"
#include "client/memory_storage.h"
#include "server/users.h"
#include "store/store.h"
#include "support/skiffd_process.h"

namespace skiff::support {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kTable = "t";
constexpr int kCounters = 4;

// Everything the loads sent and the server acknowledged, over all cycles.
struct Ledger {
  std::mutex mu;
  std::map<std::string, std::string> sets;  // key -> value, acknowledged
  std::map<std::string, Clock::time_point> set_acked_at;
  std::map<std::string, std::set<std::string>> merges;  // doc -> members acknowledged
  uint64_t adds_sent[kCounters] = {};
  uint64_t adds_acked[kCounters] = {};
  uint64_t sets_acked = 0;
  uint64_t merges_acked = 0;
};

std::string CounterKey(int c) { return "n" + std::to_string(c); }

// Mixed writes through one client until `stop`; replies are booked in the
// ledger. Returns once every request sent has been answered or failed.
void RunWrites(const client::ClientOptions& options, Ledger& ledger, int cycle,
               const std::atomic<bool>& stop, client::Device* device,
               std::atomic<uint64_t>& device_puts) {
  auto connected = client::Client::Connect(options);
  if (!connected.ok()) return;
  std::unique_ptr<client::Client> c = std::move(*connected);
  std::mutex mu;
  std::condition_variable cv;
  size_t in_flight = 0;
  const size_t cap = options.connections * options.max_in_flight;
  auto finished = [&] {
    std::lock_guard lock(mu);
    --in_flight;
    cv.notify_all();
  };
  const std::string merged = "m" + std::to_string(cycle);
  for (uint64_t i = 0; !stop; ++i) {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < cap || stop; });
      if (stop) break;
      ++in_flight;
    }
    const std::string n = std::to_string(i);
    if (i % 3 == 0) {
      const std::string key = "c" + std::to_string(cycle) + "-" + n;
      c->Call({{"op", "set"}, {"table", kTable}, {"key", key}, {"value", i}},
              [&, key, n](client::Reply r) {
                if (r.ok()) {
                  std::lock_guard lock(ledger.mu);
                  ledger.sets[key] = n;
                  ledger.set_acked_at[key] = Clock::now();
                  ++ledger.sets_acked;
                }
                finished();
              });
    } else if (i % 3 == 1) {
      const int counter = static_cast<int>((i / 3) % kCounters);
      {
        std::lock_guard lock(ledger.mu);
        ++ledger.adds_sent[counter];
      }
      c->Call({{"op", "add"},
               {"table", kTable},
               {"key", CounterKey(counter)},
               {"path", doc::Value::array()},
               {"delta", 1}},
              [&, counter](client::Reply r) {
                if (r.ok()) {
                  std::lock_guard lock(ledger.mu);
                  ++ledger.adds_acked[counter];
                }
                finished();
              });
    } else {
      const std::string member = "f" + n;
      c->Call({{"op", "merge"}, {"table", kTable}, {"key", merged}, {"patch", {{member, i}}}},
              [&, member](client::Reply r) {
                if (r.ok()) {
                  std::lock_guard lock(ledger.mu);
                  ledger.merges[merged].insert(member);
                  ++ledger.merges_acked;
                }
                finished();
              });
    }
    if (device != nullptr && i % 64 == 0) {
      if (device->Put({"team", "rows", "d" + std::to_string(cycle) + "-" + n}, i).ok()) {
        ++device_puts;
      }
    }
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
}

// The store's rows of the test table, by key.
Result<std::map<std::string, std::string>> ReadTable(store::Store& store) {
  std::map<std::string, std::string> rows;
  std::string after;
  for (;;) {
    auto page = store.Scan(kTable, after, store::kMaxScanLimit);
    if (!page.ok()) return page.status();
    for (auto& kv : page->items) rows[kv.key] = std::move(kv.value);
    if (!page->next) return rows;
    after = *page->next;
  }
}

// Checks the store against the ledger after a kill at `killed_at`.
Status Verify(const std::string& url, Ledger& ledger, bool memory, Clock::time_point killed_at,
              CrashLoopReport& report, int cycle) {
  // An exclusive open: the killed server's instance lock must be gone.
  auto opened = store::OpenStore(url);
  if (!opened.ok()) return opened.status();
  auto rows = ReadTable(**opened);
  if (!rows.ok()) return rows.status();
  std::lock_guard lock(ledger.mu);
  auto violation = [&](const std::string& what) {
    if (report.violations.size() < 20) {
      report.violations.push_back("cycle " + std::to_string(cycle) + ": " + what);
    }
  };
  for (const auto& [key, value] : ledger.sets) {
    auto it = rows->find(key);
    if (it != rows->end() && it->second == value) continue;
    ++report.acked_lost;
    const double window_ms =
        std::chrono::duration<double, std::milli>(killed_at - ledger.set_acked_at[key]).count();
    report.max_lost_window_ms = std::max(report.max_lost_window_ms, window_ms);
    if (!memory) violation("acknowledged set of " + key + " is lost");
  }
  for (auto& [doc_key, members] : ledger.merges) {
    auto it = rows->find(doc_key);
    doc::Value doc =
        it == rows->end() ? doc::Value() : doc::Value::parse(it->second, nullptr, false);
    for (auto m = members.begin(); m != members.end();) {
      if (doc.is_object() && doc.contains(*m)) {
        ++m;
        continue;
      }
      ++report.acked_lost;
      if (!memory) violation("acknowledged merge of " + doc_key + "." + *m + " is lost");
      // Memory durability: forget it, so later cycles check their own.
      m = memory ? members.erase(m) : std::next(m);
    }
  }
  for (int c = 0; c < kCounters; ++c) {
    auto it = rows->find(CounterKey(c));
    const uint64_t value = it == rows->end() ? 0 : std::stoull(it->second);
    if (value > ledger.adds_sent[c]) {
      violation(CounterKey(c) + " = " + std::to_string(value) + " is above the " +
                std::to_string(ledger.adds_sent[c]) + " adds sent");
    }
    if (value < ledger.adds_acked[c]) {
      report.acked_lost += ledger.adds_acked[c] - value;
      if (!memory) {
        violation(CounterKey(c) + " = " + std::to_string(value) + " is below the " +
                  std::to_string(ledger.adds_acked[c]) + " adds acknowledged");
      }
      // Memory durability: what was lost is gone; later cycles count on.
      ledger.adds_acked[c] = value;
      ledger.adds_sent[c] = std::max(ledger.adds_sent[c], value);
    }
  }
  if (memory) {
    // Forget what was lost, so the next cycle checks its own writes.
    for (auto it = ledger.sets.begin(); it != ledger.sets.end();) {
      auto row = rows->find(it->first);
      it = row == rows->end() || row->second != it->second ? ledger.sets.erase(it) : std::next(it);
    }
  }
  return Status::Ok();
}

// Copies the ledger's totals into the report.
void Tally(Ledger& ledger, CrashLoopReport& report) {
  std::lock_guard lock(ledger.mu);
  report.sets_acked = ledger.sets_acked;
  report.merges_acked = ledger.merges_acked;
  report.adds_sent = 0;
  report.adds_acked = 0;
  for (int c = 0; c < kCounters; ++c) {
    report.adds_sent += ledger.adds_sent[c];
    report.adds_acked += ledger.adds_acked[c];
  }
}

// Creates the runs' user "ops" (every table), in `group` when one is named,
// on the store the server will use; returns its secret. The store is closed
// again before the server opens it.
Result<std::string> CreateOpsUser(const std::string& url, const std::string& group) {
  SKIFF_ASSIGN_OR_RETURN(auto store, store::OpenStore(url));
  SKIFF_ASSIGN_OR_RETURN(std::string secret,
                         server::CreateUser(*store, "ops", server::Permissions({"*"}, {"*"})));
  if (!group.empty()) {
    SKIFF_RETURN_IF_ERROR(server::CreateGroup(*store, group));
    SKIFF_RETURN_IF_ERROR(server::GrantGroup(*store, "ops", group));
  }
  return secret;
}

}  // namespace

std::string CrashLoopReport::Summary() const {
  std::ostringstream out;
  out << cycles << " cycles: " << sets_acked << " sets, " << adds_acked << " of " << adds_sent
      << " adds, " << merges_acked << " merges acknowledged; " << pushes_acked
      << " pushed changes confirmed, " << changes_stored << " stored; acknowledged lost "
      << acked_lost;
  if (acked_lost > 0) out << " (longest window " << max_lost_window_ms << " ms)";
  out << "; " << violations.size() << " violations";
  return out.str();
}

Result<CrashLoopReport> RunCrashLoop(const CrashLoopOptions& options) {
  const bool memory = options.durability == "memory";
  SKIFF_ASSIGN_OR_RETURN(std::string secret, CreateOpsUser(options.store_url, "team"));
  SkiffdProcess skiffd;
  uint16_t port = 0;
  auto start = [&]() -> Status {
    return skiffd.Start(options.skiffd,
                        {"--store=" + options.store_url, "--durability=" + options.durability,
                         "--flush-interval-ms=" + std::to_string(options.flush_interval.count()),
                         "--io-threads=1", "--port=" + std::to_string(port)});
  };
  SKIFF_RETURN_IF_ERROR(start());
  port = skiffd.port();

  client::MemoryStorage device_storage;
  client::DeviceOptions device_options;
  device_options.port = port;
  device_options.user = "ops";
  device_options.secret = secret;
  device_options.device_id = "crash-loop-device";
  device_options.max_push = 16;  // many small pushes, so kills land inside them
  device_options.backoff_min = milliseconds(10);
  device_options.backoff_max = milliseconds(200);
  auto device = client::Device::Open(device_options, device_storage);
  if (!device.ok()) return device.status();
  std::atomic<uint64_t> device_puts{0};

  client::ClientOptions client_options;
  client_options.port = port;
  client_options.user = "ops";
  client_options.secret = secret;
  client_options.connections = 2;
  client_options.max_in_flight = 64;
  client_options.reconnect = false;  // after the kill, fail what is pending at once

  Ledger ledger;
  CrashLoopReport report;
  std::mt19937 rng(options.seed);
  std::uniform_int_distribution<int64_t> delay(options.kill_after_min.count(),
                                               options.kill_after_max.count());
  for (int cycle = 0; cycle < options.cycles; ++cycle) {
    std::atomic<bool> stop{false};
    std::thread writes(
        [&] { RunWrites(client_options, ledger, cycle, stop, device->get(), device_puts); });
    std::this_thread::sleep_for(milliseconds(delay(rng)));
    const Clock::time_point killed_at = Clock::now();
    skiffd.Kill();
    stop = true;
    writes.join();
    report.pushes_acked = (*device)->counters().changes_pushed;
    SKIFF_RETURN_IF_ERROR(Verify(options.store_url, ledger, memory, killed_at, report, cycle));
    report.cycles = cycle + 1;
    Tally(ledger, report);
    SKIFF_RETURN_IF_ERROR(start());
    if (options.log) options.log("cycle " + std::to_string(cycle + 1) + ": " + report.Summary());
  }
  // The device catches up with the last server, then every change it made
  // must be in the change log exactly once.
  Status synced = (*device)->WaitUntilSynced(std::chrono::seconds(60));
  if (!synced.ok()) report.violations.push_back("device did not sync: " + synced.ToString());
  report.pushes_acked = (*device)->counters().changes_pushed;
  (*device)->Close();
  Tally(ledger, report);
  SKIFF_RETURN_IF_ERROR(skiffd.Stop());  // SIGTERM: must exit 0
  auto store = store::OpenStore(options.store_url);
  if (!store.ok()) return store.status();
  std::map<std::string, int> seen;
  for (uint64_t after = 0;;) {
    auto changes = (*store)->ReadChanges(after, {"team"}, store::kMaxScanLimit);
    if (!changes.ok()) return changes.status();
    if (changes->empty()) break;
    for (const store::Change& ch : *changes) ++seen[ch.key];
    after = changes->back().sync_id;
  }
  report.changes_stored = 0;
  for (const auto& [key, n] : seen) {
    report.changes_stored += static_cast<uint64_t>(n);
    if (n != 1) report.violations.push_back(key + " was applied " + std::to_string(n) + " times");
  }
  if (seen.size() != device_puts.load()) {
    report.violations.push_back(std::to_string(device_puts.load()) + " device changes made, " +
                                std::to_string(seen.size()) + " distinct ones stored");
  }
  return report;
}

std::string SoakReport::Summary() const {
  std::ostringstream out;
  out.precision(3);
  for (size_t i = 0; i < windows.size(); ++i) {
    out << "window " << i + 1 << ": " << windows[i].ops_per_s << " ops/s, "
        << windows[i].ops_per_server_cpu_s << " ops per server CPU s, rss "
        << windows[i].server_rss_bytes / (1024 * 1024) << " MiB\n";
  }
  out << "last/first: " << last_to_first_ops << " (ops/s), " << last_to_first_ops_per_cpu
      << " (ops per CPU s); rss keeps growing: " << (rss_keeps_growing ? "yes" : "no")
      << "; errors " << errors << ", violations " << violations.size();
  return out.str();
}

Result<SoakReport> RunSoak(const SoakOptions& options) {
  SKIFF_ASSIGN_OR_RETURN(std::string secret, CreateOpsUser(options.store_url, ""));
  SkiffdProcess skiffd;
  SKIFF_RETURN_IF_ERROR(
      skiffd.Start(options.skiffd, {"--store=" + options.store_url, "--io-threads=1"}));
  client::ClientOptions co;
  co.port = skiffd.port();
  co.user = "ops";
  co.secret = secret;
  co.connections = 4;
  co.max_in_flight = 32;
  auto connected = client::Client::Connect(co);
  if (!connected.ok()) return connected.status();
  client::Client& c = **connected;

  // A bounded key space: a server whose memory grows here leaks.
  constexpr uint64_t kKeys = 5000;
  std::mutex mu;
  std::condition_variable cv;
  size_t in_flight = 0;
  std::atomic<uint64_t> done{0}, errors{0}, adds_acked{0};
  SoakReport report;
  auto finished = [&](const client::Reply& r) {
    if (!r.ok()) ++errors;
    ++done;
    std::lock_guard lock(mu);
    --in_flight;
    cv.notify_all();
  };
  const auto begin = Clock::now();
  const auto end = begin + options.budget;
  auto window_start = begin;
  uint64_t window_ops = done;
  double window_cpu = skiffd.CpuSeconds();
  for (uint64_t i = 0; Clock::now() < end; ++i) {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < co.connections * co.max_in_flight; });
      ++in_flight;
    }
    const uint64_t k = (i * 7919) % kKeys;
    const std::string key = "s" + std::to_string(k);
    switch (i % 4) {
      case 0:
        c.Call({{"op", "set"}, {"table", kTable}, {"key", key}, {"value", {{"v", i}}}}, finished);
        break;
      case 1:
        c.Call({{"op", "get"}, {"table", kTable}, {"key", key}}, finished);
        break;
      case 2:
        c.Call({{"op", "add"},
                {"table", kTable},
                {"key", "counter"},
                {"path", doc::Value::array()},
                {"delta", 1}},
               [&](client::Reply r) {
                 if (r.ok()) ++adds_acked;
                 finished(r);
               });
        break;
      default:
        c.Call({{"op", "merge"},
                {"table", kTable},
                {"key", "m" + std::to_string(k % 100)},
                {"patch", {{"f" + std::to_string(i % 50), i}}}},
               finished);
    }
    const auto now = Clock::now();
    if (now - window_start >= options.window) {
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      const double cpu = skiffd.CpuSeconds();
      const uint64_t ops = done - window_ops;
      SoakWindow w;
      w.ops_per_s = double(ops) / seconds;
      w.ops_per_server_cpu_s = cpu > window_cpu ? double(ops) / (cpu - window_cpu) : 0;
      w.server_rss_bytes = ResidentBytes(skiffd.pid());
      report.windows.push_back(w);
      if (options.log) {
        options.log("window " + std::to_string(report.windows.size()) + ": " +
                    std::to_string(static_cast<int64_t>(w.ops_per_s)) + " ops/s, rss " +
                    std::to_string(w.server_rss_bytes / (1024 * 1024)) + " MiB");
      }
      window_start = now;
      window_ops = done;
      window_cpu = cpu;
    }
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return in_flight == 0; });
  }
  report.errors = errors;
  // Verify: the counter holds every acknowledged add, exactly.
  auto counter = c.Get(kTable, "counter");
  if (!counter.ok() || !counter->has_value() || **counter != doc::Value(adds_acked.load())) {
    report.violations.push_back("counter does not hold the " + std::to_string(adds_acked.load()) +
                                " acknowledged adds");
  }
  c.Shutdown();
  SKIFF_RETURN_IF_ERROR(skiffd.Stop());
  if (report.windows.size() >= 2) {
    const SoakWindow& first = report.windows.front();
    const SoakWindow& last = report.windows.back();
    report.last_to_first_ops = first.ops_per_s > 0 ? last.ops_per_s / first.ops_per_s : 0;
    report.last_to_first_ops_per_cpu =
        first.ops_per_server_cpu_s > 0 ? last.ops_per_server_cpu_s / first.ops_per_server_cpu_s : 0;
    // Grows in every window of the second half, and by over 10 % in all.
    const size_t half = report.windows.size() / 2;
    bool grew = report.windows.size() >= 4;
    for (size_t i = half; i + 1 < report.windows.size(); ++i) {
      grew = grew && report.windows[i + 1].server_rss_bytes > report.windows[i].server_rss_bytes;
    }
    report.rss_keeps_growing =
        grew && double(last.server_rss_bytes) > 1.1 * double(report.windows[half].server_rss_bytes);
  }
  return report;
}

}  // namespace skiff::support
