// The transport family of the end-to-end suite: what the wire costs before
// any document is touched. echo (one connection, then --concurrency x
// --pipeline) is the raw WebSocket floor of the server; session-churn is
// login and logout; tcp-pingpong/sequential is the loopback round trip of
// two plain sockets, the floor under every sequential scenario, and
// get-vs-tcp/sequential holds a one-connection get to that floor, the two
// measured in alternating rounds; echo/sequential is measured the same way
// on every server (echo_vs_tcp). Both echo cases also run on a skiffd
// child over ws:// and wss:// side by side (.../child, .../child-tls): what
// TLS adds to a round trip and to the server's CPU per request.
//
// Both echo cases run first on the floor peer (.../floor,
// bench/peers/floor_echo.cc, a child process): one epoll thread answering
// each read with one write and no JSON parsing, the least a WebSocket
// server on this machine can spend on them. Every row of the case after it
// reports its rate, server CPU per request and p99 as ratios to the floor's
// (ops_per_s_vs_floor, server_cpu_vs_floor, p99_vs_floor). The floor serves
// no TLS, so it has no -tls row and the .../child-tls rows have no ratio to
// it; it runs only where the suite starts its servers (not with --url).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/kv_workloads.h"
#include "support/scenario.h"

namespace skiff::bench {
namespace {

// echo {"data":"e<n>..."}: every reply must carry its own request's data.
class Echoes final : public Workload {
 public:
  bool Next(size_t conn, size_t slot, std::string& body) override {
    EnsureSlot(sent_, conn, slot);
    sent_[conn][slot] = next_++;
    body += "\"op\":\"echo\",\"data\":\"e";
    body += std::to_string(sent_[conn][slot]);
    body += "-0123456789abcdef\"";
    return true;
  }
  std::string Check(size_t conn, size_t slot, const ReplyView& reply) override {
    const std::string want = "\"e" + std::to_string(sent_[conn][slot]) + "-0123456789abcdef\"";
    if (LastReplyMember(reply.text, "data") != want) return "echo returned other data";
    return {};
  }

 private:
  uint64_t next_ = 0;
  std::vector<std::vector<uint64_t>> sent_;
};

// The floor's figures per scenario ("echo/sequential"), for the rows
// registered after its own.
struct FloorFigures {
  double ops_per_s = 0;
  double server_cpu_us_per_op = 0;  // 0: not known
  double p99_us = 0;
};
std::map<std::string, FloorFigures>& FloorResults() {
  static std::map<std::string, FloorFigures> results;
  return results;
}

// On the floor's own row, records its figures for `scenario`; on any other
// row, reports the measured run's figures as ratios to them, when the
// floor's row ran and this one measured something over ws://.
void HoldToFloor(ScenarioContext& ctx, const std::string& scenario) {
  const RunResult* run = ctx.measured();
  if (ctx.stack().tls() || ctx.failed() || run == nullptr || run->ops == 0 ||
      run->wall_seconds <= 0) {
    return;
  }
  const double ops_per_s = double(run->ops) / run->wall_seconds;
  const double cpu_us_per_op =
      ctx.server_cpu_known() ? 1e6 * ctx.server_cpu_seconds() / double(run->ops) : 0;
  const double p99_us = run->latency.Summarize().p99_us;
  if (ctx.stack().store_kind() == "floor") {
    FloorResults()[scenario] = {ops_per_s, cpu_us_per_op, p99_us};
    return;
  }
  const auto floor = FloorResults().find(scenario);
  if (floor == FloorResults().end()) return;
  const FloorFigures& f = floor->second;
  SetInfo(ctx.state(), "ops_per_s_vs_floor", ops_per_s / f.ops_per_s);
  if (cpu_us_per_op > 0 && f.server_cpu_us_per_op > 0) {
    SetInfo(ctx.state(), "server_cpu_vs_floor", cpu_us_per_op / f.server_cpu_us_per_op);
  }
  if (f.p99_us > 0) SetInfo(ctx.state(), "p99_vs_floor", p99_us / f.p99_us);
}

void EchoPipelined(ScenarioContext& ctx) {
  auto driver = ctx.Pool(ctx.options().concurrency, ctx.options().pipeline);
  if (!driver) return;
  Echoes echoes;
  ctx.Measure(*driver, echoes, ctx.Ops(400'000));
  HoldToFloor(ctx, "echo/pipelined");
}

// login, logout, login, ... on one connection; every reply must be ok.
class Churn final : public Workload {
 public:
  Churn(const std::string& user, const std::string& secret) {
    login_ = "\"op\":\"login\",\"user\":";
    AppendJsonString(login_, user);
    login_ += ",\"secret\":";
    AppendJsonString(login_, secret);
  }
  bool Next(size_t, size_t, std::string& body) override {
    body += logged_in_ ? "\"op\":\"logout\"" : login_;
    return true;
  }
  std::string Check(size_t, size_t, const ReplyView&) override {
    logged_in_ = !logged_in_;
    return {};
  }
  bool logged_in() const { return logged_in_; }

 private:
  std::string login_;
  bool logged_in_ = false;
};

void SessionChurn(ScenarioContext& ctx) {
  auto driver = ctx.Pool(1, 1, /*login=*/false);
  if (!driver) return;
  const DriverOptions target = ctx.stack().Target();
  Churn churn(target.user, target.secret);
  ctx.Measure(*driver, churn, ctx.Ops(20'000));
  // The session must be what the churn says: logged out, a read is refused
  // as unauthorized; logged in, it is served.
  if (churn.logged_in() && !ctx.CallOk(*driver, "\"op\":\"logout\"", "last logout")) return;
  std::string get;
  AppendKeyOp(get, "get", ctx.stack().FreshTable("churn"), "k");
  Result<std::string> out = driver->Call(get);
  if (!out.ok() || ReplyMember(*out, "ok") != "false" ||
      out->find("unauthorized") == std::string::npos) {
    return ctx.Fail("a logged-out connection was served: " +
                    (out.ok() ? *out : out.status().ToString()));
  }
  Churn again(target.user, target.secret);
  std::string login;
  again.Next(0, 0, login);
  if (!ctx.CallOk(*driver, login, "login after churn")) return;
  if (!ctx.CallOk(*driver, get, "read after login")) return;
}

// Two plain TCP sockets on loopback bouncing 64 bytes, with TCP_NODELAY:
// the round trip no WebSocket request can beat on this machine. The echoing
// side is a thread of this process, blocking in read().
class TcpPingPong {
 public:
  static constexpr size_t kBytes = 64;

  TcpPingPong() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listener_, 1) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      error_ = "cannot listen on loopback";
      return;
    }
    echo_ = std::thread([this] { Echo(); });
    client_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(client_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(client_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      error_ = "cannot connect on loopback";
    }
  }

  ~TcpPingPong() {
    if (client_ >= 0) close(client_);                    // the echo thread reads EOF and ends
    if (listener_ >= 0) shutdown(listener_, SHUT_RDWR);  // or stops waiting in accept
    if (echo_.joinable()) echo_.join();
    if (listener_ >= 0) close(listener_);
  }

  // Empty when the pair is connected.
  const std::string& error() const { return error_; }

  struct Bounced {
    uint64_t intact = 0;  // round trips that came back as sent
    uint64_t errors = 0;  // that came back different, or broke the pair
  };

  // Up to `n` round trips, each intact one recorded in `latency` when
  // given. A round trip that differs is counted and the next one goes on; a
  // write or read that fails breaks the pair and ends the call.
  Bounced Bounce(uint64_t n, LatencyRecorder* latency) {
    Bounced out;
    char buf[kBytes];
    std::memset(buf, 'p', sizeof buf);
    for (uint64_t i = 0; i < n; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      buf[0] = static_cast<char>('a' + (sent_++) % 26);
      char in[kBytes];
      if (write(client_, buf, kBytes) != ssize_t(kBytes) || !ReadAll(in)) {
        ++out.errors;
        return out;
      }
      if (std::memcmp(in, buf, kBytes) != 0) {
        ++out.errors;
        continue;
      }
      ++out.intact;
      if (latency != nullptr) latency->Record(std::chrono::steady_clock::now() - t0);
    }
    return out;
  }

 private:
  void Echo() {
    int s = accept(listener_, nullptr, nullptr);
    if (s < 0) return;
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char buf[kBytes];
    for (;;) {
      size_t got = 0;
      while (got < kBytes) {
        ssize_t n = read(s, buf + got, kBytes - got);
        if (n <= 0) return (void)close(s);
        got += size_t(n);
      }
      if (write(s, buf, kBytes) != ssize_t(kBytes)) return (void)close(s);
    }
  }

  bool ReadAll(char (&in)[kBytes]) {
    size_t got = 0;
    while (got < kBytes) {
      const ssize_t r = read(client_, in + got, kBytes - got);
      if (r <= 0) return false;
      got += size_t(r);
    }
    return true;
  }

  int listener_ = -1;
  int client_ = -1;
  uint64_t sent_ = 0;
  std::thread echo_;
  std::string error_;
};

void BM_TcpPingPong(benchmark::State& state) {
  TcpPingPong pair;
  if (!pair.error().empty()) return state.SkipWithError(pair.error().c_str());
  const uint64_t ops = std::max<uint64_t>(1, uint64_t(20'000 * Options().BudgetScale()));
  RunResult run;
  TcpPingPong::Bounced bounced;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    bounced = pair.Bounce(ops, &run.latency);
    run.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Time per round trip, as every end-to-end case reports it.
    state.SetIterationTime(run.wall_seconds / double(std::max<uint64_t>(1, bounced.intact)));
  }
  run.ops = bounced.intact;
  SetInfo(state, "ops", double(run.ops));
  SetDeterministic(state, "err", double(bounced.errors));
  if (bounced.errors > 0 || bounced.intact != ops) {
    return state.SkipWithError("a ping-pong round trip failed or differed");
  }
  SetInfo(state, "ops_per_s", double(run.ops) / run.wall_seconds);
  SetInfo(state, "wall_s", run.wall_seconds);
  run.latency.Report(state);
  std::fprintf(stderr, "result: %s\n", ResultLine("tcp-pingpong/sequential", run).c_str());
}

// A one-connection run of `workload`, alternated round by round with the
// TCP ping-pong above. On this 2-core machine a sequential case swings
// 2-3x between runs as the scheduler places the threads, so a ratio of two
// separate runs mostly measures that; here each round's pair runs back to
// back and the median of the rounds' ratios is reported (`what`_vs_tcp,
// with tcp_ops_per_s). The case's result is the workload's rounds.
void AlternateWithTcp(ScenarioContext& ctx, LoadDriver& driver, Workload& workload,
                      const std::string& what) {
  constexpr int kRounds = 10;
  TcpPingPong tcp;
  if (!tcp.error().empty()) return ctx.Fail(tcp.error());
  const uint64_t per_round = std::max<uint64_t>(1, ctx.Ops(20'000) / kRounds);
  std::vector<double> ratios;
  double tcp_ops = 0;
  double tcp_seconds = 0;
  for (int round = 0; round < kRounds; ++round) {
    const RunResult part = ctx.MeasurePart(driver, workload, per_round);
    if (part.error_count() > 0 || part.ops == 0 || part.capped) break;
    const auto start = std::chrono::steady_clock::now();
    if (tcp.Bounce(per_round, nullptr).intact != per_round) {
      return ctx.Fail("a ping-pong round trip failed or differed");
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    tcp_ops += double(per_round);
    tcp_seconds += seconds;
    ratios.push_back((double(part.ops) / part.wall_seconds) / (double(per_round) / seconds));
  }
  if (ratios.empty()) return;  // the measured part carries the error
  std::sort(ratios.begin(), ratios.end());
  const double median = ratios.size() % 2 == 1
                            ? ratios[ratios.size() / 2]
                            : (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]) / 2;
  SetInfo(ctx.state(), what + "_vs_tcp", median);
  SetInfo(ctx.state(), "tcp_ops_per_s", tcp_ops / tcp_seconds);
  std::fprintf(stderr,
               "%s-vs-tcp: %s at %.2fx the TCP round-trip rate (median of %zu rounds; "
               "tcp %.1fk/s, rounds %.2f-%.2fx)\n",
               what.c_str(), what.c_str(), median, ratios.size(), tcp_ops / tcp_seconds / 1000,
               ratios.front(), ratios.back());
}

// get of one hot key on one connection, one request at a time, held to the
// TCP round trip (get_vs_tcp). The result line is the get.
void GetVsTcp(ScenarioContext& ctx) {
  HotKeyReads reads(ctx.stack().FreshTable("get_vs_tcp"), "get");
  auto driver = ctx.Pool(1, 1);
  if (!driver) return;
  if (!ctx.CallOk(*driver, reads.preload(), "preload")) return;
  AlternateWithTcp(ctx, *driver, reads, "get");
}

// echo on one connection, one request at a time, held to the TCP round trip
// (echo_vs_tcp) and to the floor.
void EchoSequential(ScenarioContext& ctx) {
  auto driver = ctx.Pool(1, 1);
  if (!driver) return;
  Echoes echoes;
  AlternateWithTcp(ctx, *driver, echoes, "echo");
  HoldToFloor(ctx, "echo/sequential");
}

const bool kRegistered = AddRegistration([] {
  RegisterScenario({.name = "echo/sequential",
                    .body = EchoSequential,
                    .peer = true,
                    .tls = true,
                    .floor = FLOOR_ECHO_PATH});
  RegisterScenario({.name = "echo/pipelined",
                    .body = EchoPipelined,
                    .peer = true,
                    .tls = true,
                    .floor = FLOOR_ECHO_PATH});
  RegisterScenario({.name = "session-churn/login+logout", .body = SessionChurn});
  RegisterScenario({.name = "get-vs-tcp/sequential", .body = GetVsTcp});
  AddCase("tcp-pingpong/sequential", BM_TcpPingPong)
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
});

}  // namespace
}  // namespace skiff::bench
