// Cluster mode through failovers of its PostgreSQL: three skiffd in cluster
// mode on a primary and a synchronous standby under pg_auto_failover
// (support/pg_ha.h), a load through every instance of sets on unique keys,
// adds on shared counters, merges into one shared document and sync pushes,
// and per cycle one fault of the primary: its whole node killed with
// SIGKILL, then brought back as the standby; every process of it frozen
// with SIGSTOP until writes are accepted again, then thawed; or a planned
// switchover. Checked as a history, Jepsen-style:
//   - every acknowledged set is read back with its value through every
//     instance after the last failover (no stale read) and from the store;
//   - every counter lies within [acknowledged adds, attempted adds];
//   - every acknowledged merge's field is in the shared document;
//   - every acknowledged push is stored exactly once (pulled through every
//     instance), and a push after the failovers wakes a wait on every
//     instance (LISTEN re-established).
// Prints one row per cycle, with the manager's promotion time (the
// monitor's event) beside the first write acknowledged after the outage.
// SKIFF_FAILOVER_CYCLES sets the cycles (default 2); SKIFF_FAILOVER_KIND
// the fault: kill, freeze, switchover, or mixed (the default: kill and
// switchover in turn). Skipped, saying so, without pg_auto_failover.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>
#include <signal.h>

#include "server/cluster/partition.h"
#include "support/pg_ha.h"
#include "support/postgres.h"

#include "test/faults/fault_fixture.h"

namespace skiff::testing {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
using support::PgHa;

constexpr int kInstances = 3;
constexpr int kCounters = 2;
constexpr int kDevices = 3;
constexpr const char* kSecret = "failover-cluster-secret-0123456789";

int64_t NowNs() { return SteadyClock::now().time_since_epoch().count(); }

int Cycles() {
  const char* env = std::getenv("SKIFF_FAILOVER_CYCLES");
  const int n = env ? std::atoi(env) : 2;
  return std::clamp(n, 1, 1000);
}

// The fault of cycle `cycle` (from 1).
std::string Kind(int cycle) {
  const char* env = std::getenv("SKIFF_FAILOVER_KIND");
  const std::string kind = env && *env ? env : "mixed";
  if (kind != "mixed") return kind;
  return cycle % 2 == 1 ? "kill" : "switchover";
}

doc::Value Push(int device, int seq) {
  const std::string name = "dev" + std::to_string(device);
  return {{"op", "push"},
          {"device", name},
          {"changes",
           {{{"seq", seq},
             {"table", "tasks"},
             {"key", name + "-" + std::to_string(seq)},
             {"group", "team"},
             {"value", {{"n", seq}}}}}}};
}

// What the load booked. Guarded by mu where not atomic.
struct History {
  std::mutex mu;
  std::map<std::string, int> acked_sets;
  std::set<std::pair<std::string, std::string>> acked_fields;  // (document, field)
  std::set<std::string> acked_pushes;                          // "devD-seq"
  std::array<std::atomic<int64_t>, kCounters> acked_adds{};
  std::array<std::atomic<int64_t>, kCounters> attempted_adds{};
  std::atomic<int64_t> acked{0};  // writes of every kind
  std::atomic<int64_t> failed{0};
  std::atomic<int64_t> outcome_unknown{0};
  std::map<std::string, int> other_errors;  // code and message: not a store's or a hop's
  std::atomic<int64_t> kill_ns{0};
  // Requests sent after kill_ns: when sent and answered, and whether ok.
  struct Request {
    int64_t sent_ns, done_ns;
    bool ok;
  };
  std::vector<Request> after_kill;
};

struct CycleRow {
  std::string kind;
  std::string killed;  // the node the fault hit
  int64_t acked = 0;
  int64_t failed = 0;
  int64_t unknown = 0;
  double first_write_s = -1;
  double detected_s = -1;  // fault to the monitor assigning prepare_promotion
  double promoted_s = -1;  // fault to the monitor assigning wait_primary or primary
};

class PostgresClusterFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PgHa::Installed()) {
      if (support::InCi()) FAIL() << "pg_autoctl not installed (tools/setup installs it)";
      GTEST_SKIP() << "*** pg_auto_failover not installed (postgresql-15-auto-failover, "
                      "pg-auto-failover-cli: tools/setup): cluster failover NOT run";
    }
    pg_ = std::make_unique<PgHa>(SKIFF_SOURCE_DIR "/tools", "cluster-test");
  }
  void TearDown() override {
    Thaw();
    StopLoad();
    clients_.clear();
    for (auto& p : instances_) (void)p->Stop();
    pg_.reset();  // down
  }

  void StartCluster() {
    auto url = pg_->Up();
    ASSERT_OK(url);
    url_ = *url;
    ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "user", "add", "ana", "--read", "*",
                                   "--write", "*"},
                                  &secret_),
              0);
    ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "add", "team"}), 0);
    ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "grant", "ana", "team"}),
              0);
    for (int i = 0; i < kInstances; ++i) {
      auto p = std::make_unique<support::SkiffdProcess>();
      ASSERT_OK(p->Start(SKIFFD_PATH, {"--store=" + url_, "--cluster=true",
                                       std::string("--cluster-secret=") + kSecret, "--io-threads=1",
                                       "--cluster-lease-ms=1500"}));
      instances_.push_back(std::move(p));
    }
    // Every partition served, by every instance (bounded: 60 s).
    const auto give_up = SteadyClock::now() + 60s;
    for (;;) {
      pqxx::connection conn(url_);
      pqxx::nontransaction tx(conn);
      pqxx::result r = tx.exec(
          "SELECT count(*) FILTER (WHERE owner IS NOT NULL AND lease_until > now()), "
          "count(DISTINCT owner) FROM skiff_partitions");
      if (r[0][0].as<int>() == static_cast<int>(server::cluster::kPartitions) &&
          r[0][1].as<int>() == kInstances) {
        break;
      }
      ASSERT_LT(SteadyClock::now(), give_up) << "partitions not spread over the instances";
      std::this_thread::sleep_for(50ms);
    }
  }

  std::unique_ptr<client::Client> Connect(int instance, size_t connections = 1) {
    client::ClientOptions o;
    o.port = instances_[instance]->port();
    o.user = "ana";
    o.secret = secret_;
    o.connections = connections;
    o.reconnect = true;
    o.request_timeout = 60s;
    auto c = client::Client::Connect(o);
    EXPECT_OK(c);
    return c.ok() ? std::move(*c) : nullptr;
  }

  void Book(const Status& s, int64_t sent_ns) {
    Note(sent_ns, false);
    ++history_.failed;
    if (s.code() == StatusCode::kOutcomeUnknown) ++history_.outcome_unknown;
    // A store's refusal while it reconnects, a write whose commit could
    // not be settled, a partition between owners: expected in a failover.
    const bool expected = IsStoreError(s) || s.code() == StatusCode::kOutcomeUnknown ||
                          s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kMoved;
    if (!expected) {
      std::lock_guard lock(history_.mu);
      ++history_.other_errors[s.ToString()];
    }
    std::this_thread::sleep_for(5ms);  // pacing while the store is away, not a synchronisation
  }

  void Acked(int64_t sent_ns) {
    Note(sent_ns, true);
    ++history_.acked;
  }
  void Note(int64_t sent_ns, bool ok) {
    const int64_t kill = history_.kill_ns.load();
    if (kill == 0 || sent_ns < kill) return;
    std::lock_guard lock(history_.mu);
    history_.after_kill.push_back({sent_ns, NowNs(), ok});
  }

  // A write sent just after the kill may still be acknowledged by a backend
  // not yet dead, and a slow request is not an outage: the outage is the
  // longest time after the kill in which no write was acknowledged.
  // Returns when it ended (the first acknowledgement after it) and the
  // writes acknowledged since.
  struct Outage {
    int64_t end_ns = 0;
    int64_t gap_ns = 0;
    int64_t acked_after = 0;
  };
  Outage OutageSoFar() {
    std::vector<int64_t> done;
    {
      std::lock_guard lock(history_.mu);
      for (const History::Request& r : history_.after_kill) {
        if (r.ok) done.push_back(r.done_ns);
      }
    }
    std::sort(done.begin(), done.end());
    Outage o;
    int64_t previous = history_.kill_ns;
    for (size_t i = 0; i < done.size(); ++i) {
      if (done[i] - previous > o.gap_ns) {
        o.gap_ns = done[i] - previous;
        o.end_ns = done[i];
        o.acked_after = static_cast<int64_t>(done.size() - i);
      }
      previous = done[i];
    }
    return o;
  }

  // One thread per job, each with a client on one instance.
  void StartLoad() {
    auto loop = [this](auto body) {
      load_.emplace_back([this, body] {
        for (int i = 0; !stop_ && i < 10'000'000; ++i) body(i);
      });
    };
    for (int in = 0; in < kInstances; ++in) {
      client::Client* c = clients_.emplace_back(Connect(in)).get();
      ASSERT_NE(c, nullptr);
      loop([this, c, in](int i) {
        const std::string key = "s" + std::to_string(in) + "-" + std::to_string(i);
        const int64_t sent = NowNs();
        if (Status s = c->Set("t", key, i); s.ok()) {
          Acked(sent);
          std::lock_guard lock(history_.mu);
          history_.acked_sets[key] = i;
        } else {
          Book(s, sent);
        }
      });
      for (int k = 0; k < kCounters; ++k) {
        client::Client* a = clients_.emplace_back(Connect(in)).get();
        ASSERT_NE(a, nullptr);
        loop([this, a, k](int) {
          const int64_t sent = NowNs();
          ++history_.attempted_adds[k];
          if (auto r = a->Add("t", "c" + std::to_string(k), {}, 1); r.ok()) {
            Acked(sent);
            ++history_.acked_adds[k];
          } else {
            Book(r.status(), sent);
          }
        });
      }
      client::Client* m = clients_.emplace_back(Connect(in)).get();
      ASSERT_NE(m, nullptr);
      loop([this, m, in](int i) {
        // 200 merges per instance on one document, then the next one, so
        // documents stay small over long runs.
        const std::string field = "f" + std::to_string(in) + "_" + std::to_string(i);
        const std::string doc = "shared" + std::to_string(i / 200);
        const int64_t sent = NowNs();
        if (Status s = m->Merge("t", doc, {{"all", {{field, i}}}}); s.ok()) {
          Acked(sent);
          std::lock_guard lock(history_.mu);
          history_.acked_fields.insert({doc, field});
        } else {
          Book(s, sent);
        }
      });
    }
    // A device pushes its next change through the next instance, and
    // retries one that failed (through another) until it is acknowledged,
    // as a device does.
    std::vector<client::Client*> per_instance;
    for (int in = 0; in < kInstances; ++in) {
      per_instance.push_back(clients_.emplace_back(Connect(in)).get());
      ASSERT_NE(per_instance.back(), nullptr);
    }
    for (int d = 0; d < kDevices; ++d) {
      auto seq = std::make_shared<int>(1);
      loop([this, per_instance, d, seq](int i) {
        const int64_t sent = NowNs();
        client::Reply r = per_instance[(d + i) % kInstances]->CallSync(Push(d, *seq));
        if (r.ok()) {
          Acked(sent);
          std::lock_guard lock(history_.mu);
          history_.acked_pushes.insert("dev" + std::to_string(d) + "-" + std::to_string(*seq));
          ++*seq;
        } else {
          Book(r.status(), sent);
        }
      });
    }
  }

  void Thaw() {
    for (int pid : frozen_) kill(pid, SIGCONT);
    frozen_.clear();
  }

  void StopLoad() {
    stop_ = true;
    for (std::thread& t : load_) t.join();
    load_.clear();
  }

  // Until `n` more writes are acknowledged (bounded by `limit`).
  bool AwaitAcked(int64_t n, std::chrono::seconds limit) {
    const int64_t target = history_.acked + n;
    const auto give_up = SteadyClock::now() + limit;
    while (history_.acked < target && SteadyClock::now() < give_up)
      std::this_thread::sleep_for(10ms);
    return history_.acked >= target;
  }

  CycleRow RunCycle(int cycle, bool last) {
    CycleRow row;
    const int64_t acked0 = history_.acked, failed0 = history_.failed,
                  unknown0 = history_.outcome_unknown;
    EXPECT_TRUE(AwaitAcked(200, 30s)) << "cycle " << cycle << ": the load did not run";
    auto primary = pg_->Primary();
    EXPECT_OK(primary);
    if (!primary.ok()) return row;
    row.kind = Kind(cycle);
    row.killed = primary->name;
    {
      std::lock_guard lock(history_.mu);
      history_.after_kill.clear();
    }
    const double fault_wall = support::WallSeconds();
    history_.kill_ns = NowNs();
    if (row.kind == "kill") {
      EXPECT_EQ(kill(-primary->pgid, SIGKILL), 0) << "kill -9 of group " << primary->pgid;
    } else if (row.kind == "freeze") {
      frozen_ = PgHa::Freeze(*primary);
    } else {
      EXPECT_EQ(row.kind, "switchover") << "SKIFF_FAILOVER_KIND";
      EXPECT_OK(pg_->Switchover());  // blocks while the load runs on
    }
    // Until 300 writes sent after the outage are acknowledged: load on the
    // new primary through every kind of write before the next fault (or
    // the checks).
    const auto give_up = SteadyClock::now() + 90s;
    Outage outage;
    while ((outage = OutageSoFar()).acked_after < 300 && SteadyClock::now() < give_up) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_GE(outage.acked_after, 300) << "cycle " << cycle << ": writes not accepted again";
    if (outage.end_ns != 0) {
      row.first_write_s = static_cast<double>(outage.end_ns - history_.kill_ns) / 1e9;
    }
    Thaw();
    // The manager's part, from the monitor's events (its now(), the same
    // host's system clock).
    Result<support::PgHaPromotion> promoted = pg_->PromotedAfter(row.killed, fault_wall);
    EXPECT_OK(promoted) << "cycle " << cycle;
    if (promoted.ok()) {
      if (promoted->started_s >= 0) row.detected_s = promoted->started_s - fault_wall;
      row.promoted_s = promoted->promoted_s - fault_wall;
    }
    if (!last && row.kind != "switchover") {
      EXPECT_OK(pg_->Rejoin()) << "the node did not come back as the standby";
    }
    history_.kill_ns = 0;
    row.acked = history_.acked - acked0;
    row.failed = history_.failed - failed0;
    row.unknown = history_.outcome_unknown - unknown0;
    return row;
  }

  // Reads the history back through every instance; returns the stale reads.
  int64_t CheckThrough(int instance, std::set<std::string>* pulled_once) {
    auto c = Connect(instance, 2);
    if (c == nullptr) return -1;
    int64_t stale = 0;
    for (const auto& [key, value] : history_.acked_sets) {
      auto got = c->Get("t", key);
      EXPECT_OK(got) << key;
      if (!got.ok() || !got->has_value() || **got != value) ++stale;
    }
    for (int k = 0; k < kCounters; ++k) {
      auto got = c->Get("t", "c" + std::to_string(k));
      EXPECT_OK(got);
      const int64_t n = got.ok() && got->has_value() ? (*got)->get<int64_t>() : 0;
      EXPECT_GE(n, history_.acked_adds[k].load()) << "instance " << instance << " counter " << k;
      EXPECT_LE(n, history_.attempted_adds[k].load())
          << "instance " << instance << " counter " << k;
    }
    std::map<std::string, doc::Value> docs;
    for (const auto& [key, field] : history_.acked_fields) {
      if (!docs.count(key)) {
        auto got = c->Get("t", key);
        EXPECT_OK(got) << key;
        docs[key] = got.ok() && got->has_value() ? **got : doc::Value::object();
      }
      if (!docs[key].contains("all") || !docs[key]["all"].contains(field)) ++stale;
    }
    // Each applied change takes the next sync id, so a push applied twice
    // leaves a gap (its row rewritten under a later id) or a second key.
    std::map<std::string, int> seen;
    uint64_t since = 0, expected = 0;
    for (int page = 0; page < 10'000; ++page) {
      client::Reply pulled = c->CallSync({{"op", "pull"}, {"since", since}, {"limit", 10000}});
      EXPECT_OK(pulled);
      if (!pulled.ok()) break;
      for (const auto& change : pulled->at("changes")) {
        ++seen[change.at("key").get<std::string>()];
        if (change.at("sync_id").get<uint64_t>() != ++expected) {
          pulled_once->insert("sync id " + change.at("sync_id").dump() + " where " +
                              std::to_string(expected) + " was due, through " +
                              std::to_string(instance));
          expected = change.at("sync_id").get<uint64_t>();
        }
      }
      since = pulled->at("cursor").get<uint64_t>();
      if (pulled->at("more") != true) break;
    }
    for (const auto& [key, n] : seen) {
      if (n != 1) pulled_once->insert("duplicate " + key);
    }
    for (const std::string& key : history_.acked_pushes) {
      if (!seen.count(key)) {
        pulled_once->insert("missing " + key + " through " + std::to_string(instance));
      }
    }
    return stale;
  }

  std::unique_ptr<PgHa> pg_;
  std::string url_;
  std::string secret_;
  std::vector<std::unique_ptr<support::SkiffdProcess>> instances_;
  std::vector<std::unique_ptr<client::Client>> clients_;
  std::vector<std::thread> load_;
  std::atomic<bool> stop_{false};
  std::vector<int> frozen_;  // SIGSTOPped, thawed at the latest in TearDown
  History history_;
};

TEST_F(PostgresClusterFailoverTest, ThreeInstancesLoseNothingOverFailovers) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  const int cycles = Cycles();
  std::vector<CycleRow> rows;
  for (int i = 1; i <= cycles; ++i) rows.push_back(RunCycle(i, i == cycles));
  StopLoad();

  // A wait held on every instance is answered by a push through one:
  // every instance listens again after the failovers.
  std::vector<std::unique_ptr<client::Client>> waiters;
  std::vector<std::future<client::Reply>> waits;
  uint64_t cursor = 0;
  {
    auto c = Connect(0);
    ASSERT_NE(c, nullptr);
    client::Reply r = c->CallSync(Push(kDevices, 1));
    ASSERT_OK(r);
    cursor = r->at("cursor").get<uint64_t>();
  }
  for (int in = 0; in < kInstances; ++in) {
    waiters.push_back(Connect(in));
    ASSERT_NE(waiters.back(), nullptr);
    waits.push_back(
        waiters.back()->Call({{"op", "wait"}, {"since", cursor}, {"timeout_ms", 60000}}));
  }
  // Held once `stats` through each instance counts it.
  for (int in = 0; in < kInstances; ++in) {
    const auto give_up = SteadyClock::now() + 30s;
    for (;;) {
      auto stats = waiters[in]->Stats();
      ASSERT_OK(stats);
      if ((*stats)["sync"]["waits_held"].get<int>() >= 1) break;
      ASSERT_LT(SteadyClock::now(), give_up) << "no wait held on instance " << in;
      std::this_thread::sleep_for(20ms);
    }
  }
  {
    auto c = Connect(1);
    ASSERT_NE(c, nullptr);
    ASSERT_OK(c->CallSync(Push(kDevices, 2)));
  }
  int woken = 0;
  for (auto& w : waits) {
    client::Reply r = w.get();
    EXPECT_OK(r);
    if (r.ok() && r->at("changed") == true) ++woken;
  }
  EXPECT_EQ(woken, kInstances) << "a push after the failovers did not wake every instance";

  std::set<std::string> push_problems;
  int64_t stale = 0;
  for (int in = 0; in < kInstances; ++in) stale += CheckThrough(in, &push_problems);
  clients_.clear();
  waiters.clear();
  for (auto& p : instances_) EXPECT_OK(p->Stop());

  // The store itself, skiffd stopped.
  int64_t lost = 0;
  {
    store::OpenOptions shared;
    shared.exclusive = false;
    auto store = store::OpenStore(url_, shared);
    ASSERT_OK(store);
    for (const auto& [key, value] : history_.acked_sets) {
      auto got = (*store)->Get("t", key);
      ASSERT_OK(got);
      if (*got != std::to_string(value)) ++lost;
    }
  }

  std::printf("cluster failover (3 instances, synchronous standby):\n");
  std::printf(
      "| cycle | fault | node | acknowledged | failed | outcome_unknown | fault to detected "
      "(monitor) | fault to promoted (monitor) | promoted to first write | fault to first write "
      "|\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    const CycleRow& r = rows[i];
    std::printf("| %zu | %s | %s | %lld | %lld | %lld | %.2f s | %.2f s | %.2f s | %.2f s |\n",
                i + 1, r.kind.c_str(), r.killed.c_str(), static_cast<long long>(r.acked),
                static_cast<long long>(r.failed), static_cast<long long>(r.unknown), r.detected_s,
                r.promoted_s, r.first_write_s - r.promoted_s, r.first_write_s);
  }
  std::printf(
      "totals: sets %zu, merges %zu, pushes %zu, adds %lld/%lld acknowledged; lost %lld, stale "
      "reads %lld, push problems %zu\n",
      history_.acked_sets.size(), history_.acked_fields.size(), history_.acked_pushes.size(),
      static_cast<long long>(history_.acked_adds[0] + history_.acked_adds[1]),
      static_cast<long long>(history_.attempted_adds[0] + history_.attempted_adds[1]),
      static_cast<long long>(lost), static_cast<long long>(stale), push_problems.size());
  for (const auto& [what, n] : history_.other_errors)
    std::printf("  error x%d: %s\n", n, what.c_str());
  std::fflush(stdout);

  EXPECT_EQ(lost, 0) << "acknowledged sets missing from the store";
  EXPECT_EQ(stale, 0) << "reads through an instance older than acknowledged writes";
  EXPECT_TRUE(push_problems.empty()) << *push_problems.begin();
  EXPECT_TRUE(history_.other_errors.empty()) << history_.other_errors.begin()->first;
  EXPECT_GT(history_.acked_pushes.size(), 0u);
  EXPECT_GT(history_.acked_fields.size(), 0u);
  // Writes came back after every fault (RunCycle waits for them, bounded).
  // How soon is failover_bench's figure, not a bound here: a loaded
  // machine stretches the manager's promotion.
  for (const CycleRow& row : rows) EXPECT_GT(row.first_write_s, 0);
}

}  // namespace
}  // namespace skiff::testing
