// failover_bench: skiffd on a replicated PostgreSQL (docs/cluster.md,
// "Beyond one PostgreSQL"): a pg_auto_failover monitor, a primary and a
// synchronous standby on 127.0.0.1 (tools/pg-ha, in a state directory of
// this run's own).
//   BM_ReplicationCost/<set|push>/<single_node|sync_standby>
//       kv_bench's set-small/pipelined (16 connections x 32 in flight) and
//       pushes of one row each, pipelined alike (one device per slot),
//       through one skiffd: on one unreplicated PostgreSQL (the test
//       PostgreSQL of tools/pg-up) and on the primary with its synchronous
//       standby, side by side; every set read back, every push applied once.
//       The second case of each pair prints the cost (1 - replicated /
//       single-node ops/s).
//   BM_Failover/<single|cluster>
//       sets on unique keys through one skiffd, or through each of three in
//       cluster mode, and kill -9 of the primary's node: the time from the
//       kill to the first write sent after it and acknowledged, the requests
//       that failed in between, and the acknowledged writes missing from
//       the new primary afterwards (writes_lost, deterministic: 0 with
//       synchronous replication, or the case fails). The killed node comes
//       back as the standby before the next case.
// Skipped, saying why, when pg_auto_failover is not installed or the
// replicated PostgreSQL cannot be started.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <pqxx/pqxx>
#include <signal.h>

#include "client/client.h"
#include "server/cluster/partition.h"
#include "server/permissions.h"
#include "server/users.h"
#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/e2e_options.h"
#include "support/kv_workloads.h"
#include "support/latency.h"
#include "support/load_driver.h"
#include "support/pg_ha.h"
#include "support/skiffd_process.h"
#include "support/test_store.h"

namespace skiff::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;
using support::PgHa;

constexpr size_t kConnections = 16;
constexpr size_t kPipeline = 32;
constexpr const char* kClusterSecret = "failover-bench-secret-0123456789";

std::string SkiffdBinary() {
  return GetE2eOptions().skiffd.empty() ? std::string(SKIFFD_PATH) : GetE2eOptions().skiffd;
}

// The pair, started at the first case that needs it and kept for the run.
class Replicated {
 public:
  // Its URL, the pair primary + secondary; an error saying why not.
  Result<std::string> Url() {
    if (!PgHa::Installed()) {
      return Unavailable(
          "pg_auto_failover not installed (postgresql-15-auto-failover, pg-auto-failover-cli: "
          "tools/setup)");
    }
    if (!pg_) {
      pg_ = std::make_unique<PgHa>(SKIFF_SOURCE_DIR "/tools", "failover-bench");
      SKIFF_ASSIGN_OR_RETURN(url_, pg_->Up());
    }
    if (killed_) {
      SKIFF_RETURN_IF_ERROR(pg_->Rejoin());
      killed_ = false;
    }
    return url_;
  }
  // Kills the primary's node (its process group).
  Status KillPrimary() {
    SKIFF_ASSIGN_OR_RETURN(support::PgHaNode primary, pg_->Primary());
    killed_ = true;
    if (kill(-primary.pgid, SIGKILL) != 0) return Internal("kill of the primary's group failed");
    return Status::Ok();
  }

 private:
  std::unique_ptr<PgHa> pg_;  // tools/pg-ha down when the run ends
  std::string url_;
  bool killed_ = false;
};

Replicated& Pair() {
  static Replicated pair;  // its pair goes down (tools/pg-ha down) at exit
  return pair;
}

// A user of its own per case (the replicated database is shared by the
// run's cases), allowed everything, in group "team".
Result<std::string> MakeUser(const std::string& url, const std::string& name) {
  store::OpenOptions shared;
  shared.exclusive = false;
  SKIFF_ASSIGN_OR_RETURN(auto store, store::OpenStore(url, shared));
  SKIFF_ASSIGN_OR_RETURN(std::string secret,
                         server::CreateUser(*store, name, server::Permissions({"*"}, {"*"})));
  (void)server::CreateGroup(*store, "team");  // already there from an earlier case
  SKIFF_RETURN_IF_ERROR(server::GrantGroup(*store, name, "team"));
  return secret;
}

// Pushes of one row each; every slot is a device of its own.
class PushRows final : public Workload {
 public:
  explicit PushRows(std::string prefix) : prefix_(std::move(prefix)) {}
  bool Next(size_t conn, size_t slot, std::string& body) override {
    const std::string device = prefix_ + std::to_string(conn) + "_" + std::to_string(slot);
    const uint64_t seq = ++seqs_[{conn, slot}];
    body += R"("op":"push","device":")" + device + R"(","changes":[{"seq":)" + std::to_string(seq) +
            R"(,"table":"tasks","key":")" + device + "-" + std::to_string(seq) +
            R"(","group":"team","value":{"n":)" + std::to_string(seq) + "}}]";
    return true;
  }
  std::string Check(size_t, size_t, const ReplyView& reply) override {
    // The reply's members in the server's order: ..."applied":N,"last_seq":...
    if (reply.text.find(R"("applied":1,)") == std::string_view::npos) {
      return "a push that did not apply its row: " + std::string(reply.text.substr(0, 200));
    }
    ++applied;
    return "";
  }
  uint64_t applied = 0;

 private:
  std::string prefix_;
  std::map<std::pair<size_t, size_t>, uint64_t> seqs_;
};

uint64_t Ops() { return ByProfile<uint64_t>(6000, 60000, 300000); }
std::chrono::nanoseconds Cap() {
  return ByProfile<std::chrono::nanoseconds>(seconds(20), seconds(60), seconds(120));
}

// ops/s of each (family, target) run so far, for the side-by-side line.
std::map<std::string, double>& Rates() {
  static auto* rates = new std::map<std::string, double>();
  return *rates;
}

void BM_ReplicationCost(benchmark::State& state, const std::string& family, bool replicated) {
  static int cases = 0;
  const std::string tag = family + std::to_string(++cases);
  std::unique_ptr<support::TestStore> single;
  std::string url;
  if (replicated) {
    Result<std::string> u = Pair().Url();
    if (!u.ok()) {
      std::fprintf(stderr, "failover_bench: *** %s; skipped ***\n", u.status().ToString().c_str());
      return state.SkipWithError(("skipped: " + u.status().message()).c_str());
    }
    url = *u;
  } else {
    single = OpenTestStore(state, "postgres");
    if (!single) return;
    single->Close();
    url = single->url();
  }
  Result<std::string> secret = MakeUser(url, "bench_" + tag);
  if (!secret.ok()) return state.SkipWithError(("a user: " + secret.status().ToString()).c_str());
  support::SkiffdProcess skiffd;
  if (Status s = skiffd.Start(SkiffdBinary(), {"--store", url, "--io-threads", "1"}); !s.ok()) {
    return state.SkipWithError(("starting skiffd: " + s.ToString()).c_str());
  }
  DriverOptions o;
  o.port = skiffd.port();
  o.user = "bench_" + tag;
  o.secret = *secret;
  o.connections = kConnections;
  o.pipeline = kPipeline;
  auto driver = LoadDriver::Connect(o);
  if (!driver.ok())
    return state.SkipWithError(("connecting: " + driver.status().ToString()).c_str());
  UniqueSets sets("sets_" + tag, SmallValue);
  PushRows pushes("d" + tag + "_");
  Workload& work = family == "set" ? static_cast<Workload&>(sets) : pushes;
  RunResult run;
  for (auto _ : state) {
    RunLimits limits;
    limits.max_ops = Ops();
    limits.cap = Cap();
    run = (*driver)->Run(work, limits);
    state.SetIterationTime(run.wall_seconds);
  }
  if (run.error_count() > 0)
    return state.SkipWithError(("a request failed: " + run.first_error).c_str());
  // Every acknowledged write is there.
  if (family == "set") {
    ReadBack back("sets_" + tag, sets.SampleAcked(sets.acked()), SmallValue);
    RunResult r = (*driver)->Run(back, RunLimits());
    if (r.error_count() > 0 || back.verified() == 0 || back.verified() != sets.acked()) {
      return state.SkipWithError("a set acknowledged but not read back");
    }
  } else if (pushes.applied == 0 || pushes.applied != run.ops) {
    return state.SkipWithError("a push acknowledged but not applied once");
  }
  const LatencySummary lat = run.latency.Summarize();
  const double rate = double(run.ops) / run.wall_seconds;
  SetInfo(state, "ops_per_s", rate);
  SetInfo(state, "p50_us", lat.p50_us);
  SetInfo(state, "p99_us", lat.p99_us);
  Rates()[family + (replicated ? "/sync_standby" : "/single_node")] = rate;
  const auto one = Rates().find(family + "/single_node");
  const auto two = Rates().find(family + "/sync_standby");
  if (one != Rates().end() && two != Rates().end() && one->second > 0) {
    const double cost = 1 - two->second / one->second;
    SetInfo(state, "replication_cost_pct", 100 * cost);
    std::fprintf(stderr,
                 "failover_bench: %s pipelined: %.0f ops/s on one PostgreSQL, %.0f with a "
                 "synchronous standby: %.0f %% cost\n",
                 family.c_str(), one->second, two->second, 100 * cost);
  }
}

// What a failover run booked. A write sent just after the kill may still be
// acknowledged by a backend that has not died yet; the outage is what the
// clients saw: failures, and writes that hung (over kStalled) before their
// acknowledgement.
struct Booked {
  struct Request {
    int64_t sent_ns, done_ns;
    bool ok;
  };
  std::mutex mu;
  std::map<std::string, int> acked;  // key -> value
  std::vector<Request> after_kill;   // requests sent after the kill
  std::atomic<int64_t> kill_ns{0};

  static constexpr int64_t kStalled = 1'000'000'000;
  // When the last sign of the outage ended (0: none seen yet), and the
  // acknowledged writes sent after it.
  std::pair<int64_t, int64_t> Outage() {
    std::lock_guard lock(mu);
    int64_t end = 0;
    for (const Request& r : after_kill) {
      if (!r.ok || r.done_ns - r.sent_ns > kStalled) end = std::max(end, r.done_ns);
    }
    int64_t since = 0;
    for (const Request& r : after_kill) since += r.ok && end != 0 && r.sent_ns >= end;
    return {end, since};
  }
  int64_t failed() {
    std::lock_guard lock(mu);
    int64_t n = 0;
    for (const Request& r : after_kill) n += !r.ok;
    return n;
  }
};

int64_t NowNs() { return SteadyClock::now().time_since_epoch().count(); }

void BM_Failover(benchmark::State& state, bool cluster) {
  static int cases = 0;
  const std::string tag = (cluster ? "cluster" : "single") + std::to_string(++cases);
  Result<std::string> url = Pair().Url();
  if (!url.ok()) {
    std::fprintf(stderr, "failover_bench: *** %s; skipped ***\n", url.status().ToString().c_str());
    return state.SkipWithError(("skipped: " + url.status().message()).c_str());
  }
  Result<std::string> secret = MakeUser(*url, "bench_" + tag);
  if (!secret.ok()) return state.SkipWithError(("a user: " + secret.status().ToString()).c_str());
  std::vector<std::unique_ptr<support::SkiffdProcess>> instances;
  for (int i = 0; i < (cluster ? 3 : 1); ++i) {
    std::vector<std::string> flags = {"--store", *url, "--io-threads", "1"};
    if (cluster) {
      for (const char* f : {"--cluster", "true", "--cluster-secret", kClusterSecret,
                            "--cluster-lease-ms", "1500"}) {
        flags.push_back(f);
      }
    }
    auto p = std::make_unique<support::SkiffdProcess>();
    if (Status s = p->Start(SkiffdBinary(), flags); !s.ok()) {
      return state.SkipWithError(("starting skiffd: " + s.ToString()).c_str());
    }
    instances.push_back(std::move(p));
  }
  if (cluster) {  // every partition served (bounded)
    const auto give_up = SteadyClock::now() + seconds(60);
    for (;;) {
      pqxx::connection conn(*url);
      pqxx::nontransaction tx(conn);
      pqxx::result r = tx.exec(
          "SELECT count(*) FILTER (WHERE owner IS NOT NULL AND lease_until > now()) FROM "
          "skiff_partitions WHERE owner IN (SELECT id FROM skiff_cluster_instances)");
      if (r[0][0].as<uint32_t>() == server::cluster::kPartitions) break;
      if (SteadyClock::now() > give_up) return state.SkipWithError("the cluster did not start");
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  std::vector<std::unique_ptr<client::Client>> clients;
  constexpr int kWriters = 6;
  for (int w = 0; w < kWriters; ++w) {
    client::ClientOptions o;
    o.port = instances[w % instances.size()]->port();
    o.user = "bench_" + tag;
    o.secret = *secret;
    o.connections = 1;
    o.request_timeout = seconds(60);
    auto c = client::Client::Connect(o);
    if (!c.ok()) return state.SkipWithError(("connecting: " + c.status().ToString()).c_str());
    clients.push_back(std::move(*c));
  }
  Booked booked;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acked{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; !stop && i < 10'000'000; ++i) {
        const std::string key = tag + "-" + std::to_string(w) + "-" + std::to_string(i);
        const int64_t sent = NowNs();
        const Status s = clients[w]->Set("t", key, i);
        const int64_t done = NowNs();
        const int64_t kill_ns = booked.kill_ns;
        {
          std::lock_guard lock(booked.mu);
          if (s.ok()) booked.acked[key] = i;
          if (kill_ns != 0 && sent >= kill_ns) booked.after_kill.push_back({sent, done, s.ok()});
        }
        if (s.ok()) {
          ++acked;
        } else {
          std::this_thread::sleep_for(milliseconds(5));  // pacing while the store is away
        }
      }
    });
  }
  auto await = [&](int64_t more) {
    const int64_t target = acked + more;
    const auto give_up = SteadyClock::now() + seconds(60);
    while (acked < target && SteadyClock::now() < give_up)
      std::this_thread::sleep_for(milliseconds(10));
    return acked >= target;
  };
  bool ok = await(500);
  double failover_s = 0;
  for (auto _ : state) {
    booked.kill_ns = NowNs();
    if (Status s = Pair().KillPrimary(); !s.ok()) {
      ok = false;
      break;
    }
    // Until 300 writes sent after the outage's last sign are acknowledged
    // (bounded).
    const auto give_up = SteadyClock::now() + seconds(90);
    while (booked.Outage().second < 300 && SteadyClock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    const auto [end, since] = booked.Outage();
    if (since < 300) {
      ok = false;
      break;
    }
    // The first write acknowledged once the outage was over.
    int64_t first = INT64_MAX;
    {
      std::lock_guard lock(booked.mu);
      for (const Booked::Request& r : booked.after_kill) {
        if (r.ok && r.done_ns >= end) first = std::min(first, r.done_ns);
      }
    }
    failover_s = double(first - booked.kill_ns) / 1e9;
    state.SetIterationTime(failover_s);
  }
  stop = true;
  for (std::thread& t : writers) t.join();
  clients.clear();
  for (auto& p : instances) (void)p->Stop();
  if (!ok) return state.SkipWithError("writes not acknowledged again within 90 s of the kill");
  // Every acknowledged write on the new primary.
  int64_t lost = 0;
  {
    store::OpenOptions shared;
    shared.exclusive = false;
    auto store = store::OpenStore(*url, shared);
    if (!store.ok())
      return state.SkipWithError(("reading back: " + store.status().ToString()).c_str());
    for (const auto& [key, value] : booked.acked) {
      auto got = (*store)->Get("t", key);
      if (!got.ok())
        return state.SkipWithError(("reading back: " + got.status().ToString()).c_str());
      if (*got != std::to_string(value)) ++lost;
    }
  }
  SetInfo(state, "failover_ms", failover_s * 1000);
  SetInfo(state, "requests_failed", double(booked.failed()));
  SetInfo(state, "writes_acknowledged", double(booked.acked.size()));
  SetDeterministic(state, "writes_lost", double(lost));
  std::fprintf(stderr,
               "failover_bench: %s: first write acknowledged %.2f s after kill -9 of the primary; "
               "%lld requests failed; %lld of %zu acknowledged writes lost\n",
               cluster ? "3 instances in cluster mode" : "one skiffd", failover_s,
               static_cast<long long>(booked.failed()), static_cast<long long>(lost),
               booked.acked.size());
  if (lost > 0) state.SkipWithError("acknowledged writes lost with a synchronous standby");
}

const bool kRegistered = AddRegistration([] {
  if (!Options().WantsStore("postgres")) return;
  for (const char* family : {"set", "push"}) {
    for (bool replicated : {false, true}) {
      AddCase(std::string("BM_ReplicationCost/") + family +
                  (replicated ? "/sync_standby" : "/single_node"),
              [family = std::string(family), replicated](benchmark::State& s) {
                BM_ReplicationCost(s, family, replicated);
              })
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (bool cluster : {false, true}) {
    AddCase(std::string("BM_Failover/") + (cluster ? "cluster" : "single"),
            [cluster](benchmark::State& s) { BM_Failover(s, cluster); })
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
