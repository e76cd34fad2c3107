// The transport family of the end-to-end suite: what the wire costs before
// any document is touched. echo (one connection, then --concurrency x
// --pipeline) is the raw WebSocket floor of the server; session-churn is
// login and logout; tcp-pingpong/sequential is the loopback round trip of
// two plain sockets, the floor under every sequential scenario.
#include <chrono>
#include <cstdio>
#include <cstring>
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

void Echo(ScenarioContext& ctx, size_t connections, size_t pipeline, uint64_t standard_ops) {
  auto driver = ctx.Pool(connections, pipeline);
  if (!driver) return;
  Echoes echoes;
  ctx.Measure(*driver, echoes, ctx.Ops(standard_ops));
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
// the round trip no WebSocket request can beat on this machine.
void BM_TcpPingPong(benchmark::State& state) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (listener >= 0) close(listener);
    return state.SkipWithError("cannot listen on loopback");
  }
  constexpr size_t kBytes = 64;
  std::thread echo([listener] {
    int s = accept(listener, nullptr, nullptr);
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
  });
  int client = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(client);
    shutdown(listener, SHUT_RDWR);
    close(listener);
    echo.join();
    return state.SkipWithError("cannot connect on loopback");
  }
  const uint64_t ops = std::max<uint64_t>(1, uint64_t(20'000 * Options().BudgetScale()));
  RunResult run;
  char buf[kBytes];
  std::memset(buf, 'p', sizeof buf);
  uint64_t bounced = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < ops; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      buf[0] = static_cast<char>('a' + i % 26);
      if (write(client, buf, kBytes) != ssize_t(kBytes)) break;
      size_t got = 0;
      char in[kBytes];
      while (got < kBytes) {
        ssize_t n = read(client, in + got, kBytes - got);
        if (n <= 0) break;
        got += size_t(n);
      }
      if (got != kBytes || std::memcmp(in, buf, kBytes) != 0) break;
      ++bounced;
      run.latency.Record(std::chrono::steady_clock::now() - t0);
    }
    run.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(run.wall_seconds);
  }
  run.ops = bounced;
  close(client);
  echo.join();
  close(listener);
  if (bounced != ops) return state.SkipWithError("a ping-pong round trip failed or differed");
  SetInfo(state, "ops", double(run.ops));
  SetDeterministic(state, "err", 0);
  SetInfo(state, "ops_per_s", double(run.ops) / run.wall_seconds);
  run.latency.Report(state);
  state.SetItemsProcessed(static_cast<int64_t>(run.ops));
  std::fprintf(stderr, "result: %s\n", ResultLine("tcp-pingpong/sequential", run).c_str());
}

const bool kRegistered = AddRegistration([] {
  RegisterScenario({.name = "echo/sequential",
                    .body = [](ScenarioContext& c) { Echo(c, 1, 1, 20'000); },
                    .peer = true});
  RegisterScenario({.name = "echo/pipelined",
                    .body =
                        [](ScenarioContext& c) {
                          Echo(c, c.options().concurrency, c.options().pipeline, 400'000);
                        },
                    .peer = true});
  RegisterScenario({.name = "session-churn/login+logout", .body = SessionChurn});
  if (!GetE2eOptions().Skipped("tcp-pingpong/sequential")) {
    benchmark::RegisterBenchmark("tcp-pingpong/sequential", BM_TcpPingPong)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
