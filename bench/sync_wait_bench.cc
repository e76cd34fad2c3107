// The held-wait family: N devices (1,000; 10,000 in the full profile), each
// its own user on its own real WebSocket, hold a wait on a skiffd child
// process; one write that concerns all of them wakes every one.
//
// Honest by construction (Ferry's page tells of a version that measured
// nothing because its waits opened at a stale cursor and answered at once):
// every iteration, each device first pulls from its own cursor and opens its
// wait at the cursor that pull returned, so each wait is opened at the
// current cursor; the case then checks that the server holds all N waits
// and that none has answered, and only then times one push until every wait
// answered changed: true with the push's cursor.
//
// The server runs as a separate process so N connections fit the descriptor
// limit on each side and its memory is its own. Deterministic: SQL
// statements the server's store ran to open the waits, while holding them,
// and to wake them (read from the `stats` op). Info: server memory per held
// wait (resident set of skiffd, connection and session included, as Ferry
// counts it) and per wait alone.
#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <asio.hpp>
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "support/bench_options.h"
#include "support/counters.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"

#include "bench/sync_bench_common.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Many bare WebSocket client connections on one Asio loop, driven by the
// benchmark's thread: far cheaper per connection than a client::Client
// (which runs a thread per client), so the load side is not what limits N.
class WsFleet {
 public:
  using OnFrame = std::function<void(size_t conn, std::string_view payload)>;
  explicit WsFleet(OnFrame on_frame) : on_frame_(std::move(on_frame)) {}

  Status Connect(uint16_t port, size_t n) {
    asio::ip::tcp::endpoint server(asio::ip::make_address("127.0.0.1"), port);
    for (size_t i = 0; i < n; ++i) {
      auto conn = std::make_unique<Conn>(io_);
      asio::error_code ec;
      conn->socket.connect(server, ec);
      if (ec) return Unavailable("connect " + std::to_string(i) + ": " + ec.message());
      conn->socket.set_option(asio::ip::tcp::no_delay(true), ec);
      static const std::string kHandshake =
          "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
      asio::write(conn->socket, asio::buffer(kHandshake), ec);
      asio::streambuf head;
      if (!ec) asio::read_until(conn->socket, head, "\r\n\r\n", ec);
      if (ec) return Unavailable("handshake " + std::to_string(i) + ": " + ec.message());
      std::string response(asio::buffers_begin(head.data()), asio::buffers_end(head.data()));
      if (response.find(" 101 ") == std::string::npos) return Internal("handshake refused");
      conns_.push_back(std::move(conn));
      StartRead(conns_.size() - 1);
    }
    return Status::Ok();
  }

  // One masked text frame (the mask key is zero, which leaves the payload
  // as it is; servers must accept any key).
  Status Send(size_t i, const std::string& text) {
    std::string frame;
    frame.reserve(text.size() + 14);
    frame += static_cast<char>(0x81);
    if (text.size() < 126) {
      frame += static_cast<char>(0x80 | text.size());
    } else {
      frame += static_cast<char>(0x80 | 126);
      frame += static_cast<char>((text.size() >> 8) & 0xff);
      frame += static_cast<char>(text.size() & 0xff);
    }
    frame.append(4, '\0');
    frame += text;
    asio::error_code ec;
    asio::write(conns_[i]->socket, asio::buffer(frame), ec);
    return ec ? Unavailable("send: " + ec.message()) : Status::Ok();
  }

  // Runs the loop until `done()` or `timeout`; false on timeout.
  bool RunUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = SteadyClock::now() + timeout;
    while (!done()) {
      if (SteadyClock::now() > deadline) return false;
      io_.restart();
      io_.run_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  size_t size() const { return conns_.size(); }

 private:
  struct Conn {
    explicit Conn(asio::io_context& io) : socket(io) {}
    asio::ip::tcp::socket socket;
    char buf[4096];
    std::string pending;
  };

  void StartRead(size_t i) {
    Conn& c = *conns_[i];
    c.socket.async_read_some(asio::buffer(c.buf), [this, i](asio::error_code ec, size_t n) {
      if (ec) return;  // closed; the case notices missing replies
      Conn& conn = *conns_[i];
      conn.pending.append(conn.buf, n);
      Parse(i);
      StartRead(i);
    });
  }

  // Server frames are unmasked; the protocol sends text frames only.
  void Parse(size_t i) {
    std::string& p = conns_[i]->pending;
    size_t pos = 0;
    for (;;) {
      if (p.size() - pos < 2) break;
      const auto* b = reinterpret_cast<const unsigned char*>(p.data() + pos);
      uint64_t len = b[1] & 0x7f;
      size_t header = 2;
      if (len == 126) {
        if (p.size() - pos < 4) break;
        len = (uint64_t{b[2]} << 8) | b[3];
        header = 4;
      } else if (len == 127) {
        if (p.size() - pos < 10) break;
        len = 0;
        for (int k = 0; k < 8; ++k) len = (len << 8) | b[2 + k];
        header = 10;
      }
      if (p.size() - pos < header + len) break;
      if ((b[0] & 0x0f) == 0x1) on_frame_(i, std::string_view(p.data() + pos + header, len));
      pos += header + len;
    }
    p.erase(0, pos);
  }

  OnFrame on_frame_;
  asio::io_context io_;
  std::vector<std::unique_ptr<Conn>> conns_;
};

void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

Result<doc::Value> Stats(client::Client& c) { return c.CallSync({{"op", "stats"}}); }

uint64_t StatementsOf(const doc::Value& stats) {
  return stats.value("store_statements", uint64_t{0});
}

void BM_HeldWaits(benchmark::State& state, size_t n) {
  RaiseFileLimit();
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
  WsFleet* fleet_ptr = nullptr;
  WsFleet fleet([&](size_t i, std::string_view payload) {
    doc::Value reply = doc::Value::parse(payload, nullptr, false);
    if (!reply.is_object() || reply.value("ok", false) != true) {
      ++failed;
      return;
    }
    const uint64_t id = reply.value("id", uint64_t{0});
    if (id == 1) {
      ++logins;
    } else if (id == 2) {
      // The wait opens at the cursor this pull just returned.
      cursors[i] = reply.value("cursor", uint64_t{0});
      ++pulls;
      if (!fleet_ptr
               ->Send(i, "{\"id\":3,\"op\":\"wait\",\"since\":" + std::to_string(cursors[i]) +
                             ",\"timeout_ms\":60000}")
               .ok()) {
        ++failed;
      }
    } else if (id == 3) {
      ++waits;
      if (reply.value("changed", false)) ++changed;
      if (reply.value("cursor", uint64_t{0}) != wake_cursor) ++wrong_cursor;
    }
  });
  fleet_ptr = &fleet;
  if (Status s = fleet.Connect(*port, n); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  for (size_t i = 0; i < n; ++i) {
    doc::Value login = {
        {"id", 1}, {"op", "login"}, {"user", "w" + std::to_string(i)}, {"secret", secrets[i]}};
    if (!fleet.Send(i, login.dump()).ok()) return state.SkipWithError("login send failed");
  }
  if (!fleet.RunUntil([&] { return logins + failed >= n; }, std::chrono::seconds(120)) ||
      failed > 0) {
    return state.SkipWithError("not every device logged in");
  }
  const double rss_logged_in = static_cast<double>(support::ResidentBytes(skiffd.pid()));
  // The writer's device pushes once before any wait: its first push reads
  // the device's record, which is not part of waking anyone.
  uint64_t row = 0;
  // The writer's push of its next row, which every device's wait concerns.
  auto next_push = [&row] {
    ++row;
    return doc::Value{{"op", "push"},
                      {"device", "writer-device"},
                      {"changes",
                       {{{"seq", row},
                         {"table", "tasks"},
                         {"key", RowKey(row)},
                         {"group", "g"},
                         {"value", doc::Value::parse(TaskRow(row))}}}}};
  };
  auto first = (*writer)->CallSync(next_push());
  if (!first.ok()) return state.SkipWithError(first.status().ToString().c_str());

  uint64_t opens = 0, holding = 0, waking = 0, iterations = 0;
  double rss_held = 0;
  for (auto _ : state) {
    pulls = waits = changed = wrong_cursor = 0;
    auto before = Stats(**writer);
    if (!before.ok()) return state.SkipWithError(before.status().ToString().c_str());
    for (size_t i = 0; i < n; ++i) {
      std::string pull =
          "{\"id\":2,\"op\":\"pull\",\"since\":" + std::to_string(cursors[i]) + ",\"limit\":1000}";
      if (!fleet.Send(i, pull).ok()) return state.SkipWithError("pull send failed");
    }
    if (!fleet.RunUntil([&] { return pulls + failed >= n; }, std::chrono::seconds(120)) ||
        failed > 0) {
      return state.SkipWithError("not every pull answered");
    }
    // Every wait is sent; wait until the server holds all of them.
    Result<doc::Value> held = Status(StatusCode::kInternal, "no stats");
    const auto deadline = SteadyClock::now() + std::chrono::seconds(60);
    for (;;) {
      fleet.RunUntil([] { return false; }, std::chrono::milliseconds(2));
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
    fleet.RunUntil([] { return false; }, std::chrono::milliseconds(50));
    auto still = Stats(**writer);
    if (!still.ok()) return state.SkipWithError(still.status().ToString().c_str());
    if (waits > 0) return state.SkipWithError("a wait answered before the write: nothing held");

    // Timed: one write that concerns every device, until every wait answered.
    doc::Value push = next_push();
    wake_cursor = (*held)["sync"]["cursor"].get<uint64_t>() + 1;
    const auto start = SteadyClock::now();
    std::future<client::Reply> pushed = (*writer)->Call(push);
    const bool all = fleet.RunUntil([&] { return waits + failed >= n; }, std::chrono::seconds(60));
    const auto elapsed = SteadyClock::now() - start;
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
    client::Reply push_reply = pushed.get();
    if (!push_reply.ok()) return state.SkipWithError(push_reply.status().ToString().c_str());
    if (!all || failed > 0) return state.SkipWithError("not every wait answered the write");
    auto after = Stats(**writer);
    if (!after.ok()) return state.SkipWithError(after.status().ToString().c_str());
    if (changed != n || wrong_cursor != 0 ||
        (*push_reply)["cursor"].get<uint64_t>() != wake_cursor) {
      return state.SkipWithError("a wait answered without the write's change");
    }
    opens += StatementsOf(*held) - StatementsOf(*before);
    holding += StatementsOf(*still) - StatementsOf(*held);
    waking += StatementsOf(*after) - StatementsOf(*still);
    ++iterations;
  }
  const double dn = double(n), di = double(iterations);
  SetDeterministic(state, "waits_held", dn);
  SetDeterministic(state, "statements_to_open_per_waiter", double(opens) / di / dn);
  SetDeterministic(state, "statements_while_holding", double(holding) / di);
  SetDeterministic(state, "statements_to_wake", double(waking) / di);
  SetInfo(state, "server_kb_per_held_wait", (rss_held - rss_start) / dn / 1024.0);
  SetInfo(state, "server_kb_per_wait_alone", (rss_held - rss_logged_in) / dn / 1024.0);
  SetInfo(state, "server_mb_held", (rss_held - rss_start) / (1024.0 * 1024.0));
}

const bool kRegistered = AddRegistration([] {
  std::vector<size_t> sizes = {1000};
  if (Options().profile == Profile::kFull) sizes.push_back(10000);
  for (size_t n : sizes) {
    benchmark::RegisterBenchmark(("BM_HeldWaits/sqlite/devices:" + std::to_string(n)).c_str(),
                                 BM_HeldWaits, n)
        ->UseManualTime()
        ->Iterations(n >= 10000 ? 3 : 5)
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
