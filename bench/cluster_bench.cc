// cluster_bench: what cluster mode costs (docs/cluster.md). One, two and
// three skiffd processes in cluster mode on one PostgreSQL schema, the load
// spread over every instance, so about half (two instances) or two thirds
// (three) of the requests are forwarded to their partition's owner:
//   BM_ClusterSets/instances:N      kv_bench's set-small/pipelined (16 x 32
//                                   in all), read back through another
//                                   instance than the one that wrote;
//   BM_ClusterSets/instances:2/watched  the same with every table watched
//                                   through instance 0: what numbering
//                                   and logging watched changes costs the
//                                   writes, every change checked delivered;
//   BM_ClusterAddOneKey/instances:N contention_bench's add on one key,
//                                   every reply distinct, the final value
//                                   the count of acknowledged adds;
//   .../plain                       the same against one skiffd without
//                                   cluster mode, side by side: what the
//                                   fencing check and the routing cost;
//   BM_ClusterNear/instances:N      geo `near` (limit 50) over 20,000 points
//                                   through every instance: each instance
//                                   asks every owner for its share and
//                                   merges; the answers checked alike
//                                   through every instance;
//   BM_ClusterWatchDelivery         a watch on one instance, one set at a
//                                   time through the other: from the set's
//                                   sending to the watcher's event, beside
//                                   the set's acknowledgement;
//   BM_ClusterWake                  a wait held on one instance, a push
//                                   through the other: how long until the
//                                   wait is answered, and the statements of
//                                   one sync commit;
//   BM_ClusterFailover              kill -9 of a hot key's owner while adds
//                                   go through the other instance: how long
//                                   until one is acknowledged again.
// On a machine with fewer cores than instances the throughput figures are
// informational: the instances share the cores (the JSON context has
// num_cpus). The sets and add cases also report, judged, the CPU of every
// skiffd per request over the measured run (server_cpu_us_per_op; the
// PostgreSQL server's own is not in it) and the resident set of every
// skiffd together after it (server_rss_mib).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "client/client.h"
#include "doc/document.h"
#include "doc/json_skip.h"
#include "server/cluster/partition.h"
#include "server/geo_catalog.h"
#include "server/permissions.h"
#include "server/users.h"
#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/cluster_owner.h"
#include "support/counters.h"
#include "support/e2e_options.h"
#include "support/kv_workloads.h"
#include "support/latency.h"
#include "support/load_driver.h"
#include "support/process.h"
#include "support/skiffd_process.h"
#include "support/test_store.h"

namespace skiff::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kClusterSecret = "cluster-bench-secret-0123456789";
constexpr size_t kConnections = 16;
constexpr size_t kPipeline = 32;

std::string SkiffdBinary() {
  return GetE2eOptions().skiffd.empty() ? std::string(SKIFFD_PATH) : GetE2eOptions().skiffd;
}

// N skiffd in cluster mode on a PostgreSQL schema of their own, with one
// user who may read and write everything.
class Cluster {
 public:
  // n instances in cluster mode; n = 0 is one skiffd without it.
  Status Start(size_t n) {
    plain_ = n == 0;
    if (plain_) n = 1;
    SKIFF_ASSIGN_OR_RETURN(db_, support::TestStore::Open("postgres"));
    SKIFF_ASSIGN_OR_RETURN(
        secret_, server::CreateUser(db_->store(), "bench", server::Permissions({"*"}, {"*"})));
    SKIFF_RETURN_IF_ERROR(server::CreateGroup(db_->store(), "team"));
    SKIFF_RETURN_IF_ERROR(server::GrantGroup(db_->store(), "bench", "team"));
    // BM_ClusterNear's table; an index is read when an instance starts.
    server::GeoSpec places;
    places.table = "places";
    SKIFF_ASSIGN_OR_RETURN(places.lat, server::ParseGeoPath("lat"));
    SKIFF_ASSIGN_OR_RETURN(places.lon, server::ParseGeoPath("lon"));
    SKIFF_RETURN_IF_ERROR(server::AddGeoIndex(db_->store(), places));
    db_->Close();  // the instances share the database; this open held it alone
    for (size_t i = 0; i < n; ++i) {
      auto p = std::make_unique<support::SkiffdProcess>();
      std::vector<std::string> flags = {"--store", db_->url(), "--io-threads", "1"};
      if (!plain_) {
        for (const char* f : {"--cluster", "true", "--cluster-secret", kClusterSecret}) {
          flags.push_back(f);
        }
      }
      for (const std::string& a : GetE2eOptions().skiffd_args) flags.push_back(a);
      SKIFF_RETURN_IF_ERROR(p->Start(SkiffdBinary(), flags));
      instances_.push_back(std::move(p));
    }
    return plain_ ? Status::Ok() : WaitServed();
  }

  // Until every partition is served and every running instance serves
  // some (bounded).
  Status WaitServed() {
    const auto give_up = SteadyClock::now() + seconds(60);
    for (;;) {
      size_t served = 0, serving = 0, running = 0;
      for (const auto& p : instances_) {
        if (!p->running()) continue;
        ++running;
        SKIFF_ASSIGN_OR_RETURN(doc::Value stats, Stats(*p));
        const size_t s = stats["cluster"]["partitions_served"].get<size_t>();
        served += s;
        serving += s > 0;
      }
      if (served == server::cluster::kPartitions && serving == running) return Status::Ok();
      if (SteadyClock::now() > give_up) {
        return Unavailable("the cluster did not serve every partition within 60 s (" +
                           std::to_string(served) + " served)");
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
  }

  Result<doc::Value> Stats(const support::SkiffdProcess& p) {
    SKIFF_ASSIGN_OR_RETURN(auto c, Connect(p.port()));
    return c->Stats();
  }

  Result<std::unique_ptr<client::Client>> Connect(uint16_t port) {
    client::ClientOptions o;
    o.port = port;
    o.user = "bench";
    o.secret = secret_;
    o.request_timeout = seconds(30);
    return client::Client::Connect(o);
  }

  DriverOptions Driver(size_t i, size_t connections) const {
    DriverOptions o;
    o.port = instances_[i]->port();
    o.user = "bench";
    o.secret = secret_;
    o.connections = connections;
    o.pipeline = kPipeline;
    return o;
  }

  // The port of the instance owning (table, key) now; 0 when none does.
  uint16_t OwnerPort(const std::string& table, const std::string& key) {
    Result<uint16_t> port = support::ClusterOwnerPort(db_->url(), table, key);
    return port.ok() ? *port : 0;
  }

  // Statements and store transactions over every instance, from stats,
  // read on connections opened once (a login is a statement too). The sync
  // engine's reads of other instances' commits (its poll, once a second;
  // one statement each) are taken out: they are not the writes' work.
  Result<std::pair<uint64_t, uint64_t>> StoreWork() {
    if (observers_.empty()) {
      for (const auto& p : instances_) {
        SKIFF_ASSIGN_OR_RETURN(auto c, Connect(p->port()));
        observers_.push_back(std::move(c));
      }
    }
    uint64_t statements = 0, transactions = 0;
    for (size_t i = 0; i < instances_.size(); ++i) {
      if (!instances_[i]->running()) continue;
      SKIFF_ASSIGN_OR_RETURN(doc::Value stats, observers_[i]->Stats());
      statements +=
          stats["store_statements"].get<uint64_t>() - stats["sync"].value("catch_ups", uint64_t{0});
      transactions += stats["transactions"].get<uint64_t>();
    }
    return std::make_pair(statements, transactions);
  }

  // CPU every skiffd of the cluster has used so far (ones killed keep
  // none).
  double CpuSeconds() const {
    double cpu = 0;
    for (const auto& p : instances_) cpu += p->running() ? p->CpuSeconds() : 0;
    return cpu;
  }

  // The resident sets of the running instances together.
  int64_t ResidentBytes() const {
    int64_t bytes = 0;
    for (const auto& p : instances_) {
      if (p->running()) bytes += std::max<int64_t>(0, support::ResidentBytes(p->pid()));
    }
    return bytes;
  }

  size_t size() const { return instances_.size(); }
  support::SkiffdProcess& instance(size_t i) { return *instances_[i]; }

 private:
  std::unique_ptr<support::TestStore> db_;
  std::string secret_;
  std::vector<std::unique_ptr<support::SkiffdProcess>> instances_;
  std::vector<std::unique_ptr<client::Client>> observers_;
  bool plain_ = false;
};

// The connections of instance i of n when kConnections are spread evenly.
size_t ConnectionsOf(size_t i, size_t n) { return kConnections / n + (i < kConnections % n); }

// Runs one driver per instance, each on its own thread, all at once.
struct Spread {
  std::vector<std::unique_ptr<LoadDriver>> drivers;
  std::vector<RunResult> results;
  double wall_seconds = 0;

  template <typename Workloads>
  void Run(Workloads& workloads, uint64_t ops_each, std::chrono::nanoseconds cap) {
    results.assign(drivers.size(), RunResult());
    std::vector<std::thread> threads;
    const auto start = SteadyClock::now();
    for (size_t i = 0; i < drivers.size(); ++i) {
      threads.emplace_back([&, i] {
        RunLimits limits;
        limits.max_ops = ops_each;
        limits.cap = cap;
        results[i] = drivers[i]->Run(*workloads[i], limits);
      });
    }
    for (std::thread& t : threads) t.join();
    wall_seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  }
  uint64_t ops() const {
    uint64_t n = 0;
    for (const RunResult& r : results) n += r.ops;
    return n;
  }
  uint64_t errors() const {
    uint64_t n = 0;
    for (const RunResult& r : results) n += r.error_count();
    return n;
  }
  std::string first_error() const {
    for (const RunResult& r : results) {
      if (!r.first_error.empty()) return r.first_error;
    }
    return "";
  }
  LatencySummary Latency() const {
    LatencyRecorder all;
    for (const RunResult& r : results) all.Merge(r.latency);
    return all.Summarize();
  }
};

// Starts n instances and one driver per instance.
Status StartSpread(size_t n, Cluster& cluster, Spread& spread) {
  SKIFF_RETURN_IF_ERROR(cluster.Start(n));
  for (size_t i = 0; i < cluster.size(); ++i) {
    SKIFF_ASSIGN_OR_RETURN(
        auto d, LoadDriver::Connect(cluster.Driver(i, ConnectionsOf(i, cluster.size()))));
    spread.drivers.push_back(std::move(d));
  }
  return Status::Ok();
}

// The informational figures of a spread run on `n` instances (0: plain).
void ReportSpread(benchmark::State& state, const Spread& spread, size_t n) {
  const LatencySummary lat = spread.Latency();
  SetInfo(state, "instances", double(n));
  SetInfo(state, "ops_per_s", double(spread.ops()) / spread.wall_seconds);
  SetInfo(state, "p50_us", lat.p50_us);
  SetInfo(state, "p99_us", lat.p99_us);
}

void Fail(benchmark::State& state, const std::string& what, const Status& s) {
  state.SkipWithError((what + ": " + s.ToString()).c_str());
}

// The judged server figures of a measured run of `ops` requests that used
// `cpu_seconds` of the instances' CPU.
void ReportServer(benchmark::State& state, const Cluster& cluster, double cpu_seconds,
                  uint64_t ops) {
  if (ops > 0) SetJudged(state, "server_cpu_us_per_op", 1e6 * cpu_seconds / double(ops));
  if (const int64_t rss = cluster.ResidentBytes(); rss > 0) {
    SetJudged(state, "server_rss_mib", double(rss) / (1 << 20));
  }
}

uint64_t Ops() { return ByProfile<uint64_t>(6000, 60000, 300000); }
std::chrono::nanoseconds Cap() {
  return ByProfile<std::chrono::nanoseconds>(seconds(20), seconds(60), seconds(120));
}

// The change events of a cluster's watches, counted and checked: every one
// a change, versions increasing on the connection.
class WatchTally {
 public:
  void On(const client::WatchEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.kind != "change") {
      unexpected_ = e.kind;
    } else {
      out_of_order_ += e.version <= last_;
      last_ = e.version;
      ++changes_;
    }
    cv_.notify_all();
  }
  // Until `n` changes came (bounded); what is wrong otherwise, "" when all is well.
  std::string WaitFor(uint64_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, seconds(60), [&] { return changes_ >= n || !unexpected_.empty(); });
    if (!unexpected_.empty()) return "a watch got a '" + unexpected_ + "' event";
    if (changes_ != n) {
      return "watches got " + std::to_string(changes_) + " changes of " + std::to_string(n) +
             " acknowledged writes";
    }
    if (out_of_order_ > 0) return std::to_string(out_of_order_) + " changes out of order";
    return "";
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t changes_ = 0, last_ = 0, out_of_order_ = 0;
  std::string unexpected_;
};

// `watched`: one client on instance 0 watches every table written (cluster
// mode numbers and logs their changes: docs/cluster.md, "watch across
// instances"); each acknowledged set must reach it once, in order.
void BM_ClusterSets(benchmark::State& state, size_t n, bool watched = false) {
  const size_t instances = std::max<size_t>(n, 1);  // plain: one skiffd
  Cluster cluster;
  Spread spread;
  if (Status s = StartSpread(n, cluster, spread); !s.ok()) return Fail(state, "starting", s);
  std::vector<std::unique_ptr<UniqueSets>> sets;
  for (size_t i = 0; i < instances; ++i) {
    sets.push_back(std::make_unique<UniqueSets>("sets" + std::to_string(i), SmallValue));
  }
  WatchTally tally;
  std::unique_ptr<client::Client> watcher;
  if (watched) {
    auto connected = cluster.Connect(cluster.instance(0).port());
    if (!connected.ok()) return Fail(state, "connecting the watcher", connected.status());
    watcher = std::move(*connected);
    for (size_t i = 0; i < instances; ++i) {
      Result<uint64_t> w = watcher->Watch("sets" + std::to_string(i), client::WatchTarget{},
                                          [&tally](const client::WatchEvent& e) { tally.On(e); });
      if (!w.ok()) return Fail(state, "watching", w.status());
    }
  }
  auto before = cluster.StoreWork();
  if (!before.ok()) return Fail(state, "reading stats", before.status());
  const double cpu_before = cluster.CpuSeconds();
  for (auto _ : state) {
    spread.Run(sets, Ops() / instances, Cap());
    state.SetIterationTime(spread.wall_seconds);
  }
  const double cpu = cluster.CpuSeconds() - cpu_before;
  auto after = cluster.StoreWork();
  if (!after.ok()) return Fail(state, "reading stats", after.status());
  if (spread.errors() > 0)
    return state.SkipWithError(("a set failed: " + spread.first_error()).c_str());
  // Every acknowledged write, read back through another instance than the
  // writer's (with one instance, the same one).
  uint64_t verified = 0, acked = 0;
  for (size_t i = 0; i < instances; ++i) {
    ReadBack back("sets" + std::to_string(i), sets[i]->SampleAcked(sets[i]->acked()), SmallValue);
    RunResult r = spread.drivers[(i + 1) % instances]->Run(back, RunLimits());
    if (r.error_count() > 0)
      return state.SkipWithError(("a read-back failed: " + r.first_error).c_str());
    verified += back.verified();
    acked += sets[i]->acked();
  }
  if (verified == 0 || verified != acked) {
    return state.SkipWithError(("read back " + std::to_string(verified) + " of " +
                                std::to_string(acked) + " acknowledged writes")
                                   .c_str());
  }
  if (watched) {
    if (std::string wrong = tally.WaitFor(acked); !wrong.empty()) {
      return state.SkipWithError(wrong.c_str());
    }
    SetInfo(state, "watched_changes", double(acked));
  }
  const double transactions = double(after->second - before->second);
  ReportSpread(state, spread, n);
  ReportServer(state, cluster, cpu, spread.ops());
  SetInfo(state, "writes_per_transaction", double(spread.ops()) / transactions);
  // Every write batch is one statement that checks the batch's fences and
  // writes its rows (src/store/postgres_store.cc); the ratio is that count,
  // whatever the batch sizes were. Watched, each instance also reads the
  // watch log as notifications come, which timing decides.
  const double statements = double(after->first - before->first) / transactions;
  if (watched) {
    SetInfo(state, "statements_per_write_batch_with_log_reads", statements);
  } else if (n > 0) {
    SetDeterministic(state, "statements_per_write_batch", statements);
  } else {
    // One write alone is one autocommit statement, a batch three: the
    // mix depends on timing.
    SetInfo(state, "plain_statements_per_write_batch", statements);
  }
  SetInfo(state, "verified_reads", double(verified));
}

// Adds on one key through every instance; the owner serialises them.
class OneKeyAdds final : public Workload {
 public:
  bool Next(size_t, size_t, std::string& body) override {
    body += R"("op":"add","table":"counters","key":"hot","path":["n"],"delta":1)";
    return true;
  }
  std::string Check(size_t, size_t, const ReplyView& reply) override {
    const std::string_view v = LastReplyMember(reply.text, "value");
    if (v.empty()) return "an add reply without its value";
    values.push_back(std::stoll(std::string(v)));
    return "";
  }
  std::vector<int64_t> values;
};

void BM_ClusterAddOneKey(benchmark::State& state, size_t n) {
  const size_t instances = std::max<size_t>(n, 1);  // plain: one skiffd
  Cluster cluster;
  Spread spread;
  if (Status s = StartSpread(n, cluster, spread); !s.ok()) return Fail(state, "starting", s);
  std::vector<std::unique_ptr<OneKeyAdds>> adds;
  for (size_t i = 0; i < instances; ++i) adds.push_back(std::make_unique<OneKeyAdds>());
  const double cpu_before = cluster.CpuSeconds();
  for (auto _ : state) {
    spread.Run(adds, Ops() / instances, Cap());
    state.SetIterationTime(spread.wall_seconds);
  }
  const double cpu = cluster.CpuSeconds() - cpu_before;
  if (spread.errors() > 0)
    return state.SkipWithError(("an add failed: " + spread.first_error()).c_str());
  std::vector<int64_t> all;
  for (const auto& a : adds) all.insert(all.end(), a->values.begin(), a->values.end());
  std::sort(all.begin(), all.end());
  if (std::adjacent_find(all.begin(), all.end()) != all.end()) {
    return state.SkipWithError("two adds were answered the same value");
  }
  // Distinct, and the first 1 and the last their count: exactly 1..count.
  if (all.empty() || all.front() != 1 || all.back() != int64_t(all.size())) {
    return state.SkipWithError("the adds' replies are not 1, 2, ... up to their count");
  }
  for (size_t i = 0; i < instances; ++i) {
    Result<std::string> got =
        spread.drivers[i]->Call(R"("op":"get","table":"counters","key":"hot")");
    if (!got.ok()) return Fail(state, "reading the counter", got.status());
    const std::string want = R"({"n":)" + std::to_string(all.size()) + "}";
    if (!SameJson(LastReplyMember(*got, "value"), want)) {
      return state.SkipWithError(("instance " + std::to_string(i) + " read " + *got +
                                  ", not the acknowledged count " + want)
                                     .c_str());
    }
  }
  ReportSpread(state, spread, n);
  ReportServer(state, cluster, cpu, spread.ops());
}

// A point of the near cases' square of about 20 km a side, from `i`.
std::pair<double, double> PlaceOf(uint64_t i) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const double u = double(z >> 40) / double(1 << 24), v = double(z & 0xFFFFFF) / double(1 << 24);
  return {48.8 + 0.18 * u, 2.25 + 0.27 * v};
}

// The text of the array `name` of a near reply in the columns form; empty
// when it has none.
std::string_view ArrayMember(std::string_view reply, std::string_view name) {
  const std::string head = "\"" + std::string(name) + "\":";
  const size_t at = reply.find(head);
  if (at == std::string_view::npos) return {};
  const char* begin = reply.data() + at + head.size();
  const char* end = doc::SkipJsonValue(begin, reply.data() + reply.size());
  return end == nullptr ? std::string_view() : std::string_view(begin, size_t(end - begin));
}

constexpr uint64_t kPlaces = 20'000;
constexpr int kNearLimit = 50;

// Sets p<first>..p<first + count - 1> at their PlaceOf.
class PlaceSets final : public Workload {
 public:
  PlaceSets(uint64_t first, uint64_t count) : next_(first), end_(first + count) {}
  bool Next(size_t, size_t, std::string& body) override {
    if (next_ == end_) return false;
    const auto [lat, lon] = PlaceOf(next_);
    body += R"("op":"set","table":"places","key":"p)" + std::to_string(next_) +
            R"(","value":{"lat":)" + std::to_string(lat) + R"(,"lon":)" + std::to_string(lon) + "}";
    ++next_;
    return true;
  }
  std::string Check(size_t, size_t, const ReplyView&) override { return ""; }

 private:
  uint64_t next_;
  const uint64_t end_;
};

// `near` at points of the square, limit 50, in the columns form; each
// answer must hold 50 keys (the square holds 20,000 points).
class NearQueries final : public Workload {
 public:
  explicit NearQueries(uint64_t seed) : next_(seed * 1'000'003) {}
  bool Next(size_t, size_t, std::string& body) override {
    body += Query(next_++);
    return true;
  }
  static std::string Query(uint64_t i) {
    const auto [lat, lon] = PlaceOf(i + 7);
    return R"("op":"near","table":"places","lat":)" + std::to_string(lat) + R"(,"lon":)" +
           std::to_string(lon) + R"(,"limit":)" + std::to_string(kNearLimit) + R"(,"columns":true)";
  }
  std::string Check(size_t, size_t, const ReplyView& reply) override {
    const std::string_view keys = ArrayMember(reply.text, "keys");
    if (std::count(keys.begin(), keys.end(), ',') != kNearLimit - 1) {
      return "a near answer without " + std::to_string(kNearLimit) + " keys";
    }
    return "";
  }

 private:
  uint64_t next_;
};

void BM_ClusterNear(benchmark::State& state, size_t n) {
  const size_t instances = std::max<size_t>(n, 1);  // plain: one skiffd
  Cluster cluster;
  Spread spread;
  if (Status s = StartSpread(n, cluster, spread); !s.ok()) return Fail(state, "starting", s);
  std::vector<std::unique_ptr<PlaceSets>> loads;
  for (size_t i = 0; i < instances; ++i) {
    const uint64_t share = kPlaces / instances;
    loads.push_back(
        std::make_unique<PlaceSets>(i * share, i + 1 == instances ? kPlaces - i * share : share));
  }
  spread.Run(loads, kPlaces, Cap());
  if (spread.errors() > 0)
    return state.SkipWithError(("a set failed: " + spread.first_error()).c_str());
  std::vector<std::unique_ptr<NearQueries>> queries;
  for (size_t i = 0; i < instances; ++i) queries.push_back(std::make_unique<NearQueries>(i));
  const double cpu_before = cluster.CpuSeconds();
  for (auto _ : state) {
    spread.Run(queries, Ops() / 10 / instances, Cap());
    state.SetIterationTime(spread.wall_seconds);
  }
  const double cpu = cluster.CpuSeconds() - cpu_before;
  if (spread.errors() > 0)
    return state.SkipWithError(("a near failed: " + spread.first_error()).c_str());
  // The same answer whichever instance is asked: one owner's stale or
  // missing share would show here.
  uint64_t compared = 0;
  for (uint64_t q = 0; q < 20; ++q) {
    std::string first;
    for (size_t i = 0; i < instances; ++i) {
      Result<std::string> got = spread.drivers[i]->Call(NearQueries::Query(q * 7919));
      if (!got.ok()) return Fail(state, "asking near", got.status());
      const std::string answer =
          std::string(ArrayMember(*got, "keys")) + " " + std::string(ArrayMember(*got, "dist_m"));
      if (ArrayMember(*got, "keys").empty()) {
        return state.SkipWithError(("a near answer without keys: " + *got).c_str());
      }
      if (i == 0) first = answer;
      if (answer != first) {
        return state.SkipWithError(("instance " + std::to_string(i) +
                                    " answered a near unlike instance 0: " + answer + " vs " +
                                    first)
                                       .c_str());
      }
      ++compared;
    }
  }
  ReportSpread(state, spread, n);
  SetInfo(state, "answers_compared", double(compared));
  ReportServer(state, cluster, cpu, spread.ops());
}

// Two instances, and a client on each: *on_a on instance 0, *on_b on 1.
Status StartTwo(Cluster& cluster, std::unique_ptr<client::Client>* on_a,
                std::unique_ptr<client::Client>* on_b) {
  SKIFF_RETURN_IF_ERROR(cluster.Start(2));
  SKIFF_ASSIGN_OR_RETURN(*on_a, cluster.Connect(cluster.instance(0).port()));
  SKIFF_ASSIGN_OR_RETURN(*on_b, cluster.Connect(cluster.instance(1).port()));
  return Status::Ok();
}

void BM_ClusterWake(benchmark::State& state) {
  constexpr int kRounds = 20;
  Cluster cluster;
  std::unique_ptr<client::Client> waiter, pusher;
  if (Status s = StartTwo(cluster, &waiter, &pusher); !s.ok()) return Fail(state, "starting", s);
  LatencyRecorder wake;
  uint64_t cursor = 0, statements = 0, catch_ups = 0;
  for (auto _ : state) {
    auto before = pusher->Stats();
    if (!before.ok()) return Fail(state, "reading stats", before.status());
    const auto start = SteadyClock::now();
    for (int round = 1; round <= kRounds; ++round) {
      // Shared: an early return leaves the wait's callback still to run.
      auto wait_done = std::make_shared<std::promise<Result<client::WaitReply>>>();
      std::future<Result<client::WaitReply>> held = wait_done->get_future();
      waiter->Wait({cursor, milliseconds(30000)}, [wait_done](Result<client::WaitReply> r) {
        wait_done->set_value(std::move(r));
      });
      // Held on A before the push (else it would be answered at once and
      // time nothing).
      for (;;) {
        auto stats = cluster.Stats(cluster.instance(0));
        if (!stats.ok()) return Fail(state, "reading stats", stats.status());
        if ((*stats)["sync"]["waits_held"].get<int>() == 1) break;
        std::this_thread::sleep_for(milliseconds(1));
      }
      const auto pushed = SteadyClock::now();
      const client::SyncChange change{static_cast<uint64_t>(round),
                                      {"team", "tasks", "t" + std::to_string(round)},
                                      "{\"n\":" + std::to_string(round) + "}"};
      Result<client::PushReply> push = pusher->Push({"bench-device", {&change, 1}});
      if (!push.ok()) return Fail(state, "a push", push.status());
      Result<client::WaitReply> woken = held.get();
      if (!woken.ok() || !woken->changed) {
        return state.SkipWithError("the wait was not woken by the push through the other instance");
      }
      wake.Record(SteadyClock::now() - pushed);
      cursor = woken->cursor;
    }
    state.SetIterationTime(std::chrono::duration<double>(SteadyClock::now() - start).count());
    auto after = pusher->Stats();
    if (!after.ok()) return Fail(state, "reading stats", after.status());
    statements = (*after)["store_statements"].get<uint64_t>() -
                 (*before)["store_statements"].get<uint64_t>();
    catch_ups = (*after)["sync"]["catch_ups"].get<uint64_t>() -
                (*before)["sync"]["catch_ups"].get<uint64_t>();
  }
  if (cursor != kRounds) return state.SkipWithError("the cursor is not the count of pushes");
  const LatencySummary w = wake.Summarize();
  // Each push here is a sync commit of its own; the pusher's reads of the
  // others' commits (one statement each) are counted apart.
  SetDeterministic(state, "statements_per_sync_commit",
                   double(statements - catch_ups) / double(kRounds));
  SetInfo(state, "wake_p50_us", w.p50_us);
  SetInfo(state, "wake_p99_us", w.p99_us);
  std::fprintf(stderr,
               "cluster_bench: a wait on A answered %.1f ms (median of %d) after a push through "
               "B was sent\n",
               w.p50_us / 1000.0, kRounds);
}

// A watch on instance A, one set at a time through B: from the set's
// sending to the change reaching A's watcher (the owner's commit, its
// NOTIFY, A's read of the watch log, A's delivery), beside the set's own
// round trip to its acknowledgement. Each round's event must carry the
// round's value.
void BM_ClusterWatchDelivery(benchmark::State& state) {
  constexpr int kRounds = 50;
  Cluster cluster;
  std::unique_ptr<client::Client> watcher, writer;
  if (Status s = StartTwo(cluster, &watcher, &writer); !s.ok()) return Fail(state, "starting", s);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<int64_t, SteadyClock::time_point>> seen;  // value, arrival
  Result<uint64_t> watch =
      watcher->Watch("live", client::WatchTarget{}, [&](const client::WatchEvent& e) {
        if (e.kind != "change" || !e.value) return;
        std::lock_guard<std::mutex> lock(mu);
        seen.emplace_back((*e.value)["n"].get<int64_t>(), SteadyClock::now());
        cv.notify_all();
      });
  if (!watch.ok()) return Fail(state, "watching", watch.status());
  LatencyRecorder delivery, acknowledgement;
  int before_ack = 0;  // rounds whose change reached A before B's reply
  for (auto _ : state) {
    const auto start = SteadyClock::now();
    for (int round = 1; round <= kRounds; ++round) {
      // Keys spread over the partitions, so some are B's and some A's.
      const std::string key = "k" + std::to_string(round);
      const auto sent = SteadyClock::now();
      if (Status s = writer->Set("live", key, {{"n", round}}); !s.ok()) {
        return Fail(state, "a set", s);
      }
      const auto acknowledged = SteadyClock::now();
      acknowledgement.Record(acknowledged - sent);
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, seconds(30), [&] { return seen.size() == size_t(round); })) {
        return state.SkipWithError("a set through B did not reach the watcher on A within 30 s");
      }
      if (seen.back().first != round) return state.SkipWithError("a change carried another value");
      delivery.Record(seen.back().second - sent);
      before_ack += seen.back().second < acknowledged;
    }
    state.SetIterationTime(std::chrono::duration<double>(SteadyClock::now() - start).count());
  }
  const LatencySummary d = delivery.Summarize(), a = acknowledgement.Summarize();
  // Judged: a slower path from the owner's commit to another instance's
  // watcher shows here (the manual time also holds the sets' round trips).
  SetJudged(state, "delivery_p50_us", d.p50_us);
  SetInfo(state, "delivery_p99_us", d.p99_us);
  SetInfo(state, "acknowledgement_p50_us", a.p50_us);
  SetInfo(state, "delivered_before_acknowledgement", double(before_ack));
  std::fprintf(stderr,
               "cluster_bench: a set through B reached a watcher on A %.2f ms (median of %d) "
               "after it was sent, and was acknowledged after %.2f ms; %d of %d reached A first\n",
               d.p50_us / 1000.0, kRounds, a.p50_us / 1000.0, before_ack, kRounds);
}

void BM_ClusterFailover(benchmark::State& state) {
  for (auto _ : state) {
    Cluster cluster;
    if (Status s = cluster.Start(2); !s.ok()) return Fail(state, "starting the cluster", s);
    std::string key;
    for (int i = 0; key.empty() && i < 10000; ++i) {
      const std::string k = "hot" + std::to_string(i);
      if (cluster.OwnerPort("counters", k) == cluster.instance(0).port()) key = k;
    }
    if (key.empty()) return state.SkipWithError("no key owned by the first instance");
    auto through = cluster.Connect(cluster.instance(1).port());
    if (!through.ok()) return Fail(state, "connecting", through.status());
    int64_t acknowledged = 0, failed = 0;
    for (int i = 0; i < 200; ++i) {
      auto v = (*through)->Add("counters", key, {"n"}, 1);
      if (!v.ok()) return Fail(state, "an add before the kill", v.status());
      ++acknowledged;
    }
    cluster.instance(0).Kill();
    const auto killed = SteadyClock::now();
    std::chrono::duration<double> failover{0};
    for (;;) {
      auto v = (*through)->Add("counters", key, {"n"}, 1);
      if (v.ok()) {
        ++acknowledged;
        failover = SteadyClock::now() - killed;
        break;
      }
      ++failed;
      if (SteadyClock::now() - killed > seconds(30)) {
        return state.SkipWithError("the key was not served again within 30 s of the kill");
      }
    }
    state.SetIterationTime(failover.count());
    auto v = (*through)->Get("counters", key);
    if (!v.ok() || !v->has_value()) return state.SkipWithError("the counter cannot be read");
    const int64_t final_value = (**v)["n"].get<int64_t>();
    if (final_value < acknowledged || final_value > acknowledged + failed) {
      return state.SkipWithError(("final " + std::to_string(final_value) + " outside [" +
                                  std::to_string(acknowledged) + ", " +
                                  std::to_string(acknowledged + failed) + "]")
                                     .c_str());
    }
    SetInfo(state, "failover_ms", failover.count() * 1000.0);
    SetInfo(state, "adds_failed", double(failed));
    std::fprintf(stderr, "cluster_bench: served again %.0f ms after kill -9 of its owner\n",
                 failover.count() * 1000.0);
  }
}

// Every case runs its scenario once and times it itself (manual time).
void AddOnce(const std::string& name, std::function<void(benchmark::State&)> body) {
  AddCase(name, std::move(body))->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
}

const bool kRegistered = AddRegistration([] {
  if (!Options().WantsStore("postgres")) return;
  for (size_t n : {0, 1, 2, 3}) {
    const std::string suffix = n == 0 ? "/plain" : "/instances:" + std::to_string(n);
    AddOnce("BM_ClusterSets" + suffix, [n](benchmark::State& s) { BM_ClusterSets(s, n); });
    AddOnce("BM_ClusterAddOneKey" + suffix,
            [n](benchmark::State& s) { BM_ClusterAddOneKey(s, n); });
    AddOnce("BM_ClusterNear" + suffix, [n](benchmark::State& s) { BM_ClusterNear(s, n); });
  }
  AddOnce("BM_ClusterSets/instances:2/watched",
          [](benchmark::State& s) { BM_ClusterSets(s, 2, /*watched=*/true); });
  AddOnce("BM_ClusterWatchDelivery", [](benchmark::State& s) { BM_ClusterWatchDelivery(s); });
  AddOnce("BM_ClusterWake", [](benchmark::State& s) { BM_ClusterWake(s); });
  AddOnce("BM_ClusterFailover", [](benchmark::State& s) { BM_ClusterFailover(s); });
});

}  // namespace
}  // namespace skiff::bench
