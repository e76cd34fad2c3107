// The held-wait family: N devices (1,000 in the quick profile, also 10,000
// otherwise), each its own user on its own real WebSocket (support/
// ws_fleet.h), hold a wait on a skiffd child process; one write that
// concerns all of them wakes every one.
//
// Honest by construction (a published held-wait benchmark of another sync
// engine once measured nothing because its waits opened at a stale cursor
// and answered at once):
// every iteration, each device first pulls from its own cursor and opens its
// wait at the cursor that pull returned, so each wait is opened at the
// current cursor; the case then checks that the server holds all N waits
// and that none has answered, and only then times one push until every wait
// answered changed: true with the push's cursor.
//
// The server runs as a separate process so N connections fit the descriptor
// limit on each side and its memory and CPU are its own. Deterministic: the
// waits the server reports held before each write, and SQL statements the
// server's store ran to open the waits, while holding them, and to wake
// them (all read from the `stats` op). Judged: server_cpu_us_per_op (skiffd's
// CPU from the write until every wait answered, per write) and
// server_rss_mib (skiffd's resident set while it holds every wait). Info:
// server memory per held wait (connection and session included) and per
// wait alone.
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "support/bench_options.h"
#include "support/counters.h"
#include "support/process.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"
#include "support/ws_fleet.h"

#include "bench/sync_bench_common.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

Result<doc::Value> Stats(client::Client& c) { return c.CallSync({{"op", "stats"}}); }

uint64_t StatementsOf(const doc::Value& stats) {
  return stats.value("store_statements", uint64_t{0});
}

void BM_HeldWaits(benchmark::State& state, size_t n) {
  if (const uint64_t limit = RaiseDescriptorLimit(); limit < n + 256) {
    const std::string why = "needs " + std::to_string(n + 256) +
                            " descriptors in this process and in skiffd; the hard limit is " +
                            std::to_string(limit);
    std::fprintf(stderr, "sync_wait_bench: *** %s ***\n", why.c_str());
    return state.SkipWithError(why.c_str());
  }
  support::TempDir dir;
  const std::string url = "sqlite:" + dir.File("server.db");
  std::vector<std::string> secrets(n);
  std::string writer_secret;
  {
    auto store = store::OpenStore(url);
    if (!store.ok()) return state.SkipWithError(store.status().ToString().c_str());
    if (Status s = server::CreateGroup(**store, "g"); !s.ok()) {
      return state.SkipWithError(s.ToString().c_str());
    }
    for (size_t i = 0; i <= n; ++i) {
      const std::string user = i < n ? "w" + std::to_string(i) : "writer";
      auto secret = server::CreateUser(**store, user, server::Permissions());
      if (!secret.ok()) return state.SkipWithError(secret.status().ToString().c_str());
      if (Status s = server::GrantGroup(**store, user, "g"); !s.ok()) {
        return state.SkipWithError(s.ToString().c_str());
      }
      (i < n ? secrets[i] : writer_secret) = *secret;
    }
  }
  support::SkiffdProcess skiffd;
  Status started = skiffd.Start(SKIFFD_PATH, {"--store=" + url});
  Result<uint16_t> port =
      started.ok() ? Result<uint16_t>(skiffd.port()) : Result<uint16_t>(started);
  if (!port.ok()) return state.SkipWithError(port.status().ToString().c_str());
  client::ClientOptions wo;
  wo.port = *port;
  wo.user = "writer";
  wo.secret = writer_secret;
  wo.request_timeout = std::chrono::seconds(60);
  auto writer = client::Client::Connect(wo);
  if (!writer.ok()) return state.SkipWithError(writer.status().ToString().c_str());
  const double rss_start = static_cast<double>(support::ResidentBytes(skiffd.pid()));

  // Replies by kind; ids: 1 login, 2 pull, 3 wait.
  size_t logins = 0, pulls = 0, waits = 0, changed = 0, failed = 0;
  uint64_t wake_cursor = 0, wrong_cursor = 0;
  std::vector<uint64_t> cursors(n, 0);
  Fleet* fleet_ptr = nullptr;
  Fleet fleet([&](size_t i, std::string_view payload) {
    doc::Value reply = doc::Value::parse(payload, nullptr, false);
    if (!reply.is_object() || reply.value("ok", false) != true) {
      ++failed;
      return;
    }
    const uint64_t id = reply.value("id", uint64_t{0});
    if (id == 1) {
      ++logins;
    } else if (id == 2) {
      Result<client::PullReply> pulled = client::DecodePullReply(reply);
      if (!pulled.ok()) {
        ++failed;
        return;
      }
      // The wait opens at the cursor this pull just returned.
      cursors[i] = pulled->cursor;
      ++pulls;
      const client::WaitRequest wait{cursors[i], std::chrono::milliseconds(60000)};
      if (!fleet_ptr->Send(i, client::EncodeRequest(wait, 3))) ++failed;
    } else if (id == 3) {
      Result<client::WaitReply> woken = client::DecodeWaitReply(reply);
      if (!woken.ok()) {
        ++failed;
        return;
      }
      ++waits;
      if (woken->changed) ++changed;
      if (woken->cursor != wake_cursor) ++wrong_cursor;
    }
  });
  fleet_ptr = &fleet;
  if (FleetOpenReport opened = fleet.Open(*port, n, std::chrono::seconds(120));
      opened.opened != n) {
    return state.SkipWithError(("opened " + std::to_string(opened.opened) + " of " +
                                std::to_string(n) + " connections: " + opened.first_error)
                                   .c_str());
  }
  for (size_t i = 0; i < n; ++i) {
    doc::Value login = {
        {"id", 1}, {"op", "login"}, {"user", "w" + std::to_string(i)}, {"secret", secrets[i]}};
    if (!fleet.Send(i, login.dump())) return state.SkipWithError("login send failed");
  }
  if (!fleet.RunUntil([&] { return logins + failed >= n; }, std::chrono::seconds(120)) ||
      failed > 0) {
    return state.SkipWithError("not every device logged in");
  }
  const double rss_logged_in = static_cast<double>(support::ResidentBytes(skiffd.pid()));
  // The writer's device pushes once before any wait: its first push reads
  // the device's record, which is not part of waking anyone.
  uint64_t row = 0;
  // The writer's change of its next row, which every device's wait concerns.
  auto next_change = [&row] {
    ++row;
    return client::SyncChange{row, {"g", "tasks", RowKey(row)}, SortedTaskRow(row)};
  };
  const client::SyncChange first_change = next_change();
  auto first = (*writer)->Push({"writer-device", {&first_change, 1}});
  if (!first.ok()) return state.SkipWithError(first.status().ToString().c_str());

  uint64_t opens = 0, holding = 0, waking = 0, held_total = 0, iterations = 0;
  double rss_held = 0, server_cpu = 0;
  for (auto _ : state) {
    pulls = waits = changed = wrong_cursor = 0;
    auto before = Stats(**writer);
    if (!before.ok()) return state.SkipWithError(before.status().ToString().c_str());
    for (size_t i = 0; i < n; ++i) {
      const std::string pull = client::EncodeRequest(client::PullRequest{cursors[i], 1000}, 2);
      if (!fleet.Send(i, pull)) return state.SkipWithError("pull send failed");
    }
    if (!fleet.RunUntil([&] { return pulls + failed >= n; }, std::chrono::seconds(120)) ||
        failed > 0) {
      return state.SkipWithError("not every pull answered");
    }
    // Every wait is sent; wait until the server holds all of them.
    Result<doc::Value> held = Status(StatusCode::kInternal, "no stats");
    const auto deadline = SteadyClock::now() + std::chrono::seconds(60);
    for (;;) {
      fleet.RunFor(std::chrono::milliseconds(2));
      held = Stats(**writer);
      if (!held.ok()) return state.SkipWithError(held.status().ToString().c_str());
      if ((*held)["sync"]["waits_held"].get<uint64_t>() >= n) break;
      if (waits > 0 || SteadyClock::now() > deadline) break;
    }
    if (waits > 0) return state.SkipWithError("a wait answered before the write: nothing held");
    if ((*held)["sync"]["waits_held"].get<uint64_t>() != n) {
      return state.SkipWithError("the server does not hold every wait");
    }
    if (iterations == 0) rss_held = static_cast<double>(support::ResidentBytes(skiffd.pid()));
    // Holding: time passes, nothing may run SQL for the held waits.
    fleet.RunFor(std::chrono::milliseconds(50));
    auto still = Stats(**writer);
    if (!still.ok()) return state.SkipWithError(still.status().ToString().c_str());
    if (waits > 0) return state.SkipWithError("a wait answered before the write: nothing held");

    // Timed: one write that concerns every device, until every wait answered.
    const client::SyncChange change = next_change();
    wake_cursor = (*held)["sync"]["cursor"].get<uint64_t>() + 1;
    const double server_cpu_before = ProcessThreadsCpuSeconds(skiffd.pid());
    const auto start = SteadyClock::now();
    std::promise<Result<client::PushReply>> push_done;
    std::future<Result<client::PushReply>> pushed = push_done.get_future();
    (*writer)->Push({"writer-device", {&change, 1}}, [&push_done](Result<client::PushReply> r) {
      push_done.set_value(std::move(r));
    });
    const bool all = fleet.RunUntil([&] { return waits + failed >= n; }, std::chrono::seconds(60));
    const auto elapsed = SteadyClock::now() - start;
    server_cpu += ProcessThreadsCpuSeconds(skiffd.pid()) - server_cpu_before;
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
    Result<client::PushReply> push_reply = pushed.get();
    if (!push_reply.ok()) return state.SkipWithError(push_reply.status().ToString().c_str());
    if (!all || failed > 0) return state.SkipWithError("not every wait answered the write");
    auto after = Stats(**writer);
    if (!after.ok()) return state.SkipWithError(after.status().ToString().c_str());
    if (changed != n || wrong_cursor != 0 || push_reply->cursor != wake_cursor) {
      return state.SkipWithError("a wait answered without the write's change");
    }
    held_total += (*held)["sync"]["waits_held"].get<uint64_t>();
    opens += StatementsOf(*held) - StatementsOf(*before);
    holding += StatementsOf(*still) - StatementsOf(*held);
    waking += StatementsOf(*after) - StatementsOf(*still);
    ++iterations;
  }
  if (iterations == 0) return state.SkipWithError("no write ran");
  const double dn = double(n), di = double(iterations);
  SetDeterministic(state, "waits_held", double(held_total) / di);
  SetDeterministic(state, "statements_to_open_per_waiter", double(opens) / di / dn);
  SetDeterministic(state, "statements_while_holding", double(holding) / di);
  SetDeterministic(state, "statements_to_wake", double(waking) / di);
  SetJudged(state, "server_cpu_us_per_op", 1e6 * server_cpu / di);
  SetJudged(state, "server_rss_mib", rss_held / (1024.0 * 1024.0));
  SetInfo(state, "server_kb_per_held_wait", (rss_held - rss_start) / dn / 1024.0);
  SetInfo(state, "server_kb_per_wait_alone", (rss_held - rss_logged_in) / dn / 1024.0);
  SetInfo(state, "server_mb_held", (rss_held - rss_start) / (1024.0 * 1024.0));
}

const bool kRegistered = AddRegistration([] {
  std::vector<size_t> sizes = {1000};
  if (Options().profile != Profile::kQuick) sizes.push_back(10000);
  for (size_t n : sizes) {
    AddCase("BM_HeldWaits/sqlite/devices:" + std::to_string(n),
            [n](benchmark::State& s) { BM_HeldWaits(s, n); })
        ->UseManualTime()
        ->Iterations(n >= 10000 ? 3 : 5)
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
