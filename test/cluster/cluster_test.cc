// Cluster mode end to end: two or three skiffd processes in cluster mode on
// one PostgreSQL schema, driven through the real client on loopback ports.
// Every wait is bounded and asserts an outcome, never a duration.
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>
#include <signal.h>

#include "client/client.h"
#include "server/cluster/partition.h"
#include "store/store.h"
#include "support/cluster_owner.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

#include "test/server/raw_socket.h"
#include "test/store/store_test_util.h"

namespace skiff::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kSecret = "cluster-test-secret-0123456789";

doc::Value PushOne(const std::string& device, int seq, const std::string& group = "team");

// Waits for every reply: how many were acknowledged and how many failed.
// Across a killed owner a write may fail only as unavailable (nothing
// written) or outcome_unknown (written or not).
std::pair<int64_t, int64_t> Settle(std::vector<std::future<client::Reply>>& replies) {
  int64_t acknowledged = 0, failed = 0;
  for (auto& f : replies) {
    client::Reply r = f.get();
    if (r.ok()) {
      ++acknowledged;
    } else {
      ++failed;
      EXPECT_TRUE(r.status().code() == StatusCode::kUnavailable ||
                  r.status().code() == StatusCode::kOutcomeUnknown)
          << r.status().ToString();
    }
  }
  return {acknowledged, failed};
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::OpenOrSkip("postgres", &fixture_);
    if (!fixture_) return;
    fixture_->Close();
    url_ = fixture_->url();
    ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "user", "add", "ana", "--read", "*",
                                   "--write", "*"},
                                  &secret_),
              0);
  }

  std::vector<std::string> Flags() const {
    std::vector<std::string> flags = {"--store=" + url_, "--cluster=true",
                                      std::string("--cluster-secret=") + kSecret, "--io-threads=1",
                                      "--cluster-lease-ms=1500"};
    flags.insert(flags.end(), extra_flags_.begin(), extra_flags_.end());
    return flags;
  }

  // Starts `n` more instances and waits until every partition is served.
  void StartInstances(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      auto p = std::make_unique<support::SkiffdProcess>();
      ASSERT_OK(p->Start(SKIFFD_PATH, Flags()));
      instances_.push_back(std::move(p));
    }
    WaitBalanced();
  }

  // The fixture's URL carries only libpq parameters.
  pqxx::result Query(const std::string& sql) {
    pqxx::connection conn(url_);
    pqxx::nontransaction tx(conn);
    return tx.exec(sql);
  }

  // Until every partition has a live lease and every running instance
  // holds some (bounded: 60 s).
  void WaitBalanced() {
    size_t running = 0;
    for (const auto& p : instances_) running += p->running();
    const auto give_up = std::chrono::steady_clock::now() + seconds(60);
    for (;;) {
      pqxx::result r = Query(
          "SELECT count(*) FILTER (WHERE owner IS NOT NULL AND lease_until > now()), "
          "count(DISTINCT owner) FROM skiff_partitions");
      const size_t served = r[0][0].as<size_t>(), owners = r[0][1].as<size_t>();
      if (served == cluster_partitions() && owners == running) return;
      ASSERT_LT(std::chrono::steady_clock::now(), give_up)
          << served << " partitions served by " << owners << " instances of " << running;
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  static size_t cluster_partitions() { return server::cluster::kPartitions; }

  // The port of the instance that owns (table, key) now.
  uint16_t OwnerPort(const std::string& table, const std::string& key) {
    Result<uint16_t> port = support::ClusterOwnerPort(url_, table, key);
    EXPECT_OK(port);
    return port.ok() ? *port : 0;
  }

  // The first of `prefix`0, `prefix`1, ... that `owner` owns in `table`;
  // "" (and a failure) when none of the first 10,000 is, so a lost store
  // cannot make the search endless.
  std::string KeyOwnedBy(const std::string& table, const std::string& prefix,
                         const support::SkiffdProcess& owner) {
    for (int i = 0; i < 10'000; ++i) {
      const std::string k = prefix + std::to_string(i);
      if (OwnerPort(table, k) == owner.port()) return k;
    }
    ADD_FAILURE() << "no key " << prefix << "N of " << table << " is owned by port "
                  << owner.port();
    return "";
  }

  std::unique_ptr<client::Client> Connect(uint16_t port, size_t connections = 2,
                                          bool reconnect = true) {
    client::ClientOptions o;
    o.tls = !tls_ca_.empty();
    o.tls_ca_file = tls_ca_;
    o.reconnect = reconnect;
    o.port = port;
    o.user = "ana";
    o.secret = secret_;
    o.connections = connections;
    o.request_timeout = seconds(30);
    auto c = client::Client::Connect(o);
    EXPECT_OK(c);
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::optional<std::string> Stored(const std::string& table, const std::string& key) {
    store::OpenOptions shared;
    shared.exclusive = false;
    auto store = store::OpenStore(url_, shared);
    EXPECT_OK(store);
    auto v = (*store)->Get(table, key);
    EXPECT_OK(v);
    return v.ok() ? *v : std::nullopt;
  }

  // A bare WebSocket to `port`, logged in as ana, with a watch opened by
  // `fields` (request id 2); *opened gets the reply. The watch's events are
  // read frame by frame from it: a client that is not the SDK checks the wire.
  std::unique_ptr<RawSocket> RawWatch(uint16_t port, const std::string& fields,
                                      doc::Value* opened) {
    auto raw = std::make_unique<RawSocket>(port);
    EXPECT_TRUE(raw->WaitOpen());
    auto login = raw->Exchange(R"({"id":1,"op":"login","user":"ana","secret":")" + secret_ + "\"}");
    EXPECT_TRUE(login && (*login)["ok"] == true) << (login ? login->dump() : "no reply");
    auto reply = raw->Exchange(R"({"id":2,"op":"watch",)" + fields + "}");
    EXPECT_TRUE(reply && (*reply)["ok"] == true) << (reply ? reply->dump() : "no reply");
    if (reply) *opened = *reply;
    return raw;
  }

  static doc::Value AddOne(const std::string& key) {
    return {{"op", "add"}, {"table", "counters"}, {"key", key}, {"path", {"n"}}, {"delta", 1}};
  }

  std::unique_ptr<support::TestStore> fixture_;
  std::string url_;
  std::string secret_;
  std::vector<std::unique_ptr<support::SkiffdProcess>> instances_;
  std::vector<std::string> extra_flags_;  // for every instance started after
  std::string tls_ca_;                    // clients connect over wss:// trusting it
};

TEST_F(ClusterTest, ContendedAddThroughEveryInstanceLosesNothing) {
  if (!fixture_) return;
  StartInstances(3);
  std::vector<std::unique_ptr<client::Client>> clients;
  for (const auto& p : instances_) clients.push_back(Connect(p->port()));
  constexpr int kPerInstance = 600;
  std::vector<std::future<client::Reply>> replies;
  for (int i = 0; i < kPerInstance; ++i) {
    for (auto& c : clients) replies.push_back(c->Call(AddOne("hot")));
  }
  std::set<int64_t> seen;
  for (auto& f : replies) {
    client::Reply r = f.get();
    ASSERT_OK(r);
    const int64_t v = r->at("value").get<int64_t>();
    EXPECT_TRUE(seen.insert(v).second) << "two adds were answered " << v;
  }
  const int64_t total = kPerInstance * 3;
  EXPECT_EQ(*seen.begin(), 1);
  EXPECT_EQ(*seen.rbegin(), total);
  for (auto& c : clients) {
    auto v = c->Get("counters", "hot");
    ASSERT_OK(v);
    ASSERT_TRUE(v->has_value());
    EXPECT_EQ((**v)["n"].get<int64_t>(), total);
  }
  EXPECT_EQ(Stored("counters", "hot"), "{\"n\":" + std::to_string(total) + "}");
}

TEST_F(ClusterTest, ContendedMergeThroughEveryInstanceKeepsEveryField) {
  if (!fixture_) return;
  StartInstances(3);
  std::vector<std::unique_ptr<client::Client>> clients;
  for (const auto& p : instances_) clients.push_back(Connect(p->port()));
  constexpr int kPerInstance = 200;
  std::vector<std::future<client::Reply>> replies;
  for (int i = 0; i < kPerInstance; ++i) {
    for (size_t c = 0; c < clients.size(); ++c) {
      const std::string field = "f" + std::to_string(c) + "_" + std::to_string(i);
      replies.push_back(clients[c]->Call({{"op", "merge"},
                                          {"table", "docs"},
                                          {"key", "shared"},
                                          {"patch", {{"all", {{field, i}}}}}}));
    }
  }
  for (auto& f : replies) ASSERT_OK(f.get());
  for (auto& c : clients) {
    auto v = c->Get("docs", "shared");
    ASSERT_OK(v);
    ASSERT_TRUE(v->has_value());
    EXPECT_EQ((**v)["all"].size(), static_cast<size_t>(kPerInstance * 3));
  }
}

TEST_F(ClusterTest, WriteThroughOneIsReadThroughTheOthersAtOnce) {
  if (!fixture_) return;
  StartInstances(3);
  auto a = Connect(instances_[0]->port(), 1);
  auto b = Connect(instances_[1]->port(), 1);
  auto c = Connect(instances_[2]->port(), 1);
  std::set<uint16_t> owners;
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(i);
    if (uint16_t owner = OwnerPort("notes", key); owner != 0) owners.insert(owner);
    auto absent = b->Get("notes", key);  // B has seen it absent
    ASSERT_OK(absent);
    ASSERT_FALSE(absent->has_value());
    ASSERT_OK(a->Set("notes", key, {{"v", i}}));
    for (auto* reader : {b.get(), c.get()}) {
      auto v = reader->Get("notes", key);
      ASSERT_OK(v);
      ASSERT_TRUE(v->has_value()) << key;
      EXPECT_EQ((**v)["v"].get<int>(), i);
    }
  }
  // Partitions may still be evening out between the three; the keys must
  // at least have crossed instances.
  EXPECT_GE(owners.size(), 2u) << "the keys should fall in partitions of several instances";
}

// The keys of a near's answer, in order; empty when it failed.
std::vector<std::string> NearKeys(client::Client& c, double lat, int limit, bool values = false) {
  client::Reply r = c.CallSync({{"op", "near"},
                                {"table", "places"},
                                {"lat", lat},
                                {"lon", 0.0},
                                {"limit", limit},
                                {"values", values}});
  EXPECT_OK(r);
  std::vector<std::string> keys;
  if (!r.ok()) return keys;
  for (const auto& item : r->at("items")) {
    keys.push_back(item.at("key"));
    if (values) {
      // The document read with it is the key's own.
      EXPECT_EQ(item.at("value").at("name"), item.at("key"));
    }
  }
  return keys;
}

// p<from>, ..., p<from + n - 1>: the expected answers, nearest first.
std::vector<std::string> Places(int from, int n) {
  std::vector<std::string> keys;
  for (int i = from; i < from + n; ++i) keys.push_back("p" + std::to_string(i));
  return keys;
}

doc::Value Place(int i, double lat) {
  return {{"name", "p" + std::to_string(i)}, {"lat", lat}, {"lon", 0.0}};
}

// Each instance's geo index follows the writes of the partitions it
// serves; a near through any instance asks every owner for its share.
// Points along a meridian, p<i> about 111 m * i north of (0, 0), so the
// exact answer is known. After the owner of a third of them is killed, the
// survivors read those partitions' positions again from the store: the
// answer stays exact, moves made through the dead instance included.
TEST_F(ClusterTest, NearThroughAnyInstanceIsExactAcrossMovesAndATakeover) {
  if (!fixture_) return;
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "geo", "add", "places", "--lat",
                                 "lat", "--lon", "lon"}),
            0);
  StartInstances(3);
  auto a = Connect(instances_[0]->port(), 1);
  auto b = Connect(instances_[1]->port(), 1);
  auto c = Connect(instances_[2]->port(), 1);
  constexpr int kPoints = 300;
  for (int i = 0; i < kPoints; ++i) {
    ASSERT_OK(b->Set("places", "p" + std::to_string(i), Place(i, 0.001 * i)));
  }
  std::set<uint16_t> owners;
  for (int i = 0; i < kPoints; ++i) owners.insert(OwnerPort("places", "p" + std::to_string(i)));
  ASSERT_EQ(owners.size(), 3u) << "the points should fall in every instance's partitions";
  for (auto* through : {a.get(), b.get(), c.get()}) {
    EXPECT_EQ(NearKeys(*through, 0, 40), Places(0, 40));
    EXPECT_EQ(NearKeys(*through, 0, 25, /*values=*/true), Places(0, 25));
  }
  // Moves through the instance about to die: p0..p49 go far north, each
  // written by its owner, whoever that is.
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK(a->Set("places", "p" + std::to_string(i), Place(i, 60 + 0.001 * i)));
  }
  EXPECT_EQ(NearKeys(*c, 0, 40), Places(50, 40));
  EXPECT_EQ(NearKeys(*b, 60, 10), Places(0, 10));
  instances_[0]->Kill();
  WaitBalanced();
  for (auto* through : {b.get(), c.get()}) {
    EXPECT_EQ(NearKeys(*through, 0, 40), Places(50, 40));
    EXPECT_EQ(NearKeys(*through, 60, 50, /*values=*/true), Places(0, 50));
    EXPECT_EQ(NearKeys(*through, 0, kPoints).size(), size_t{kPoints});
  }
  // A refusal reads as it would on one instance.
  client::Reply bad =
      c->CallSync({{"op", "near"}, {"table", "places"}, {"lat", 91.0}, {"lon", 0.0}, {"limit", 5}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kBadRequest) << bad.status().ToString();
}

// kill -9 of the owner of a hot key while adds go through the other
// instance: acknowledged <= final <= acknowledged + unanswered, and the key
// is served again.
TEST_F(ClusterTest, KilledOwnerLosesNoAcknowledgedWrite) {
  if (!fixture_) return;
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "add", "team"}), 0);
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "grant", "ana", "team"}), 0);
  StartInstances(2);
  const std::string key = KeyOwnedBy("counters", "hot", *instances_[0]);
  ASSERT_FALSE(key.empty());
  auto through_b = Connect(instances_[1]->port());
  // Pushes through the instance about to die, too: each acknowledged one
  // must be in the store after the kill.
  auto through_a = Connect(instances_[0]->port(), 2, /*reconnect=*/false);
  std::vector<std::future<client::Reply>> pushes;
  // One device per push: a device's pushes must go one after another.
  for (int d = 1; d <= 200; ++d) {
    pushes.push_back(through_a->Call(PushOne("dev-a" + std::to_string(d), 1)));
  }
  std::vector<std::future<client::Reply>> replies;
  for (int i = 0; i < 400; ++i) replies.push_back(through_b->Call(AddOne(key)));
  replies.front().wait();
  pushes[20].wait();
  instances_[0]->Kill();
  for (int i = 0; i < 400; ++i) replies.push_back(through_b->Call(AddOne(key)));
  auto [acknowledged, failed] = Settle(replies);
  WaitBalanced();
  // Served again by the survivor.
  auto v = through_b->Get("counters", key);
  ASSERT_OK(v);
  ASSERT_TRUE(v->has_value());
  const int64_t final_value = (**v)["n"].get<int64_t>();
  EXPECT_GE(final_value, acknowledged);
  EXPECT_LE(final_value, acknowledged + failed);
  EXPECT_EQ(Stored("counters", key), "{\"n\":" + std::to_string(final_value) + "}");
  std::vector<std::string> acknowledged_pushes;
  for (size_t d = 0; d < pushes.size(); ++d) {
    client::Reply r = pushes[d].get();
    if (r.ok() && r->at("applied") == 1) {
      acknowledged_pushes.push_back("dev-a" + std::to_string(d + 1) + "-1");
    }
  }
  ASSERT_FALSE(acknowledged_pushes.empty());
  // Seen through the survivor: at once when the dead instance's
  // notification went out, else at the survivor's next poll (the kill may
  // fall between a commit and its NOTIFY).
  std::set<std::string> stored;
  const auto give_up = std::chrono::steady_clock::now() + seconds(60);
  for (;;) {
    client::Reply pulled = through_b->CallSync({{"op", "pull"}, {"since", 0}, {"limit", 10000}});
    ASSERT_OK(pulled);
    stored.clear();
    for (const auto& change : pulled->at("changes")) stored.insert(change.at("key"));
    size_t missing = 0;
    for (const std::string& pushed : acknowledged_pushes) missing += stored.count(pushed) == 0;
    if (missing == 0 || std::chrono::steady_clock::now() > give_up) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  for (const std::string& pushed : acknowledged_pushes) {
    EXPECT_EQ(stored.count(pushed), 1u) << "acknowledged push " << pushed << " is not stored";
  }
  std::printf(
      "killed owner: %zu acknowledged pushes stored; adds: %lld acknowledged, %lld "
      "failed, final %lld\n",
      acknowledged_pushes.size(), static_cast<long long>(acknowledged),
      static_cast<long long>(failed), static_cast<long long>(final_value));
}

// An owner frozen past its lease is taken over; thawed, it commits nothing
// and serves no stale value.
TEST_F(ClusterTest, ZombieOwnerCommitsNothingAndServesNoStaleRead) {
  if (!fixture_) return;
  StartInstances(2);
  const std::string key = KeyOwnedBy("notes", "z", *instances_[0]);
  ASSERT_FALSE(key.empty());
  auto zombie = Connect(instances_[0]->port(), 1);
  auto other = Connect(instances_[1]->port(), 1);
  ASSERT_OK(zombie->Set("notes", key, {{"v", "old"}}));
  ASSERT_EQ(::kill(instances_[0]->pid(), SIGSTOP), 0);
  // Taken over once the lease ran out (the frozen process keeps its
  // session, so only the lease tells).
  const auto give_up = std::chrono::steady_clock::now() + seconds(60);
  while (OwnerPort("notes", key) != instances_[1]->port()) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_OK(other->Set("notes", key, {{"v", "new"}}));
  ASSERT_EQ(::kill(instances_[0]->pid(), SIGCONT), 0);
  // The thawed instance's read is forwarded (or held until it knows the
  // new owner), never answered from its cached "old".
  auto v = zombie->Get("notes", key);
  ASSERT_OK(v);
  ASSERT_TRUE(v->has_value());
  EXPECT_EQ((**v)["v"], "new");
  ASSERT_OK(zombie->Set("notes", key, {{"v", "newer"}}));
  EXPECT_EQ(Stored("notes", key), "{\"v\":\"newer\"}");
}

// Adding a third instance and then stopping one moves partitions under
// load through the instance that stays: every add is answered ok and none
// is lost.
TEST_F(ClusterTest, JoinAndLeaveUnderLoadLoseNothing) {
  if (!fixture_) return;
  StartInstances(2);
  auto b = Connect(instances_[1]->port());
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acknowledged{0}, errors{0};
  auto load = [&](client::Client* c, int worker) {
    int i = 0;
    while (!stop.load()) {
      std::vector<std::future<client::Reply>> batch;
      for (int j = 0; j < 32; ++j) {
        batch.push_back(c->Call(AddOne("c" + std::to_string((worker * 7 + i + j) % 64))));
      }
      for (auto& f : batch) {
        client::Reply r = f.get();
        if (r.ok()) {
          acknowledged.fetch_add(1);
        } else {
          errors.fetch_add(1);
          std::fprintf(stderr, "add failed: %s\n", r.status().ToString().c_str());
        }
      }
      ++i;
    }
  };
  std::thread lb(load, b.get(), 1);
  StartInstances(1);  // joins: partitions move to it
  const int64_t after_join = acknowledged.load();
  ASSERT_OK(instances_[0]->Stop());  // leaves: its partitions move away
  WaitBalanced();
  std::this_thread::sleep_for(milliseconds(300));
  stop = true;
  lb.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(acknowledged.load(), after_join);
  int64_t sum = 0;
  auto c = Connect(instances_[2]->port());
  for (int k = 0; k < 64; ++k) {
    auto v = c->Get("counters", "c" + std::to_string(k));
    ASSERT_OK(v);
    if (v->has_value()) sum += (**v)["n"].get<int64_t>();
  }
  EXPECT_EQ(sum, acknowledged.load());
}

doc::Value PushOne(const std::string& device, int seq, const std::string& group) {
  return {{"op", "push"},
          {"device", device},
          {"changes",
           {{{"seq", seq},
             {"table", "tasks"},
             {"key", device + "-" + std::to_string(seq)},
             {"group", group},
             {"value", {{"n", seq}}}}}}};
}

// Pushes of six devices, each moving between the three instances from one
// push to the next: sync ids 1..N with no gap or repeat, each (device, seq)
// once, a retry through another instance applies nothing, and a cursor from
// one instance is good on another.
TEST_F(ClusterTest, PushesThroughEveryInstanceNumberOneToN) {
  if (!fixture_) return;
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "add", "team"}), 0);
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "grant", "ana", "team"}), 0);
  StartInstances(3);
  std::vector<std::unique_ptr<client::Client>> clients;
  for (const auto& p : instances_) clients.push_back(Connect(p->port()));
  constexpr int kDevices = 6, kPushes = 30;
  std::vector<std::thread> devices;
  std::atomic<int> failures{0};
  for (int d = 0; d < kDevices; ++d) {
    devices.emplace_back([&, d] {
      for (int seq = 1; seq <= kPushes; ++seq) {
        client::Reply r =
            clients[(d + seq) % 3]->CallSync(PushOne("dev" + std::to_string(d), seq, "team"));
        if (!r.ok() || r->at("applied") != 1) ++failures;
      }
    });
  }
  for (std::thread& t : devices) t.join();
  ASSERT_EQ(failures.load(), 0);
  // A retry of an applied push, through another instance.
  client::Reply retried = clients[2]->CallSync(PushOne("dev0", kPushes, "team"));
  ASSERT_OK(retried);
  EXPECT_EQ(retried->at("applied"), 0);
  const uint64_t cursor = retried->at("cursor").get<uint64_t>();
  EXPECT_EQ(cursor, static_cast<uint64_t>(kDevices * kPushes));
  for (auto& c : clients) {
    // The cursor instance C gave out, accepted here. It comes first: an
    // instance learns of another's commits from its NOTIFY, which may not
    // have arrived yet, and a cursor ahead of its own makes it catch up
    // from the store (docs/cluster.md), so every pull after it sees all.
    client::Reply from_c = c->CallSync({{"op", "pull"}, {"since", cursor}});
    ASSERT_OK(from_c);
    EXPECT_TRUE(from_c->at("changes").empty());
    client::Reply pulled = c->CallSync({{"op", "pull"}, {"since", 0}, {"limit", 10000}});
    ASSERT_OK(pulled);
    std::set<std::string> keys;
    uint64_t expected = 0;
    for (const auto& change : pulled->at("changes")) {
      EXPECT_EQ(change.at("sync_id").get<uint64_t>(), ++expected);
      EXPECT_TRUE(keys.insert(change.at("key").get<std::string>()).second);
    }
    EXPECT_EQ(keys.size(), static_cast<size_t>(kDevices * kPushes));
  }
}

// Waits held on A for two groups; a push through B to one of them wakes
// exactly that group's waits.
TEST_F(ClusterTest, APushThroughOneWakesExactlyItsGroupsWaitsOnAnother) {
  if (!fixture_) return;
  for (const char* g : {"team", "other"}) {
    ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "add", g}), 0);
  }
  std::string bob;
  ASSERT_EQ(
      support::RunCommand(
          {SKIFF_PATH, "--store", url_, "user", "add", "bob", "--read", "*", "--write", "*"}, &bob),
      0);
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "grant", "ana", "team"}), 0);
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "group", "grant", "bob", "other"}),
            0);
  StartInstances(2);
  constexpr int kWaits = 500;  // per group: 1,000 held on A, 16 per connection at most
  auto waiters = [&](const std::string& user, const std::string& secret) {
    client::ClientOptions o;
    o.port = instances_[0]->port();
    o.user = user;
    o.secret = secret;
    o.connections = kWaits / 16 + 1;
    o.max_in_flight = 16;
    o.request_timeout = seconds(120);
    auto c = client::Client::Connect(o);
    EXPECT_OK(c);
    return std::move(*c);
  };
  auto team = waiters("ana", secret_);
  auto other = waiters("bob", bob);
  std::vector<std::future<client::Reply>> team_waits, other_waits;
  for (int i = 0; i < kWaits; ++i) {
    team_waits.push_back(team->Call({{"op", "wait"}, {"since", 0}, {"timeout_ms", 60000}}));
    other_waits.push_back(other->Call({{"op", "wait"}, {"since", 0}, {"timeout_ms", 60000}}));
  }
  auto a = Connect(instances_[0]->port(), 1);
  const auto give_up = std::chrono::steady_clock::now() + seconds(60);
  for (;;) {  // until every wait is held on A
    auto stats = a->Stats();
    ASSERT_OK(stats);
    if ((*stats)["sync"]["waits_held"].get<int>() == 2 * kWaits) break;
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
    std::this_thread::sleep_for(milliseconds(20));
  }
  auto b = Connect(instances_[1]->port(), 1);
  const auto pushed = std::chrono::steady_clock::now();
  ASSERT_OK(b->CallSync(PushOne("ana-phone", 1, "team")));
  for (auto& w : team_waits) {
    client::Reply r = w.get();
    ASSERT_OK(r);
    EXPECT_EQ(r->at("changed"), true);
  }
  std::printf(
      "cluster wake: %d waits on A woken %.1f ms after the push "
      "through B\n",
      kWaits,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - pushed).count());
  auto stats = a->Stats();
  ASSERT_OK(stats);
  EXPECT_EQ((*stats)["sync"]["waits_held"].get<int>(), kWaits) << "the other group's waits stay";
  for (auto& w : other_waits) {
    EXPECT_EQ(w.wait_for(milliseconds(0)), std::future_status::timeout);
  }
  other.reset();  // its waits are dropped with its connections
}

TEST(ClusterModeTest, RefusedOnSqliteSayingWhy) {
  support::TempDir dir;
  std::string output;
  const int rc =
      support::RunCommand({"/bin/sh", "-c",
                           std::string(SKIFFD_PATH) + " --store=sqlite:" + dir.File("skiff.db") +
                               " --port=0 --cluster=true --cluster-secret=" + kSecret + " 2>&1"},
                          &output);
  EXPECT_NE(rc, 0);
  EXPECT_NE(output.find("cluster mode needs PostgreSQL"), std::string::npos) << output;
}

// The links' user is no back door: without the cluster secret a login as
// it is refused like any wrong secret.
// Instances that serve wss:// link to each other over TLS and check each
// other's certificate: writes through each instance, for keys every
// instance owns, are read back through the others. An instance that does
// not trust its peers' issuer links to none of them and says why.
TEST_F(ClusterTest, LinksSpeakTlsAndCheckThePeersCertificate) {
  if (!fixture_) return;
  support::TempDir dir;
  const support::TestCertFiles certs = support::WriteTestCertificates(dir.path().string());
  extra_flags_ = {"--tls-cert", certs.cert, "--tls-key", certs.key, "--cluster-tls-ca", certs.ca};
  tls_ca_ = certs.ca;
  StartInstances(2);
  auto a = Connect(instances_[0]->port(), 1);
  auto b = Connect(instances_[1]->port(), 1);
  ASSERT_TRUE(a && b);
  std::set<uint16_t> owners;
  for (int i = 0; i < 100; ++i) {
    const std::string key = "t" + std::to_string(i);
    if (uint16_t owner = OwnerPort("notes", key); owner != 0) owners.insert(owner);
    client::Client& writer = i % 2 == 0 ? *a : *b;
    client::Client& reader = i % 2 == 0 ? *b : *a;
    ASSERT_OK(writer.Set("notes", key, {{"v", i}}));
    auto v = reader.Get("notes", key);
    ASSERT_OK(v);
    ASSERT_TRUE(v->has_value()) << key;
    EXPECT_EQ((**v)["v"].get<int>(), i);
  }
  EXPECT_EQ(owners.size(), 2u) << "the keys should fall in partitions of both instances";

  // A third instance trusting another root: its links are refused by its
  // own check, so a key it does not own cannot be reached through it.
  auto untrusting = std::make_unique<support::SkiffdProcess>();
  std::vector<std::string> flags = Flags();
  flags.back() = certs.other_ca;  // --cluster-tls-ca
  ASSERT_OK(untrusting->Start(SKIFFD_PATH, flags));
  client::ClientOptions o;
  o.tls = true;
  o.tls_ca_file = certs.ca;
  o.port = untrusting->port();
  o.user = "ana";
  o.secret = secret_;
  o.reconnect = false;
  o.request_timeout = seconds(30);
  auto c = client::Client::Connect(o);
  ASSERT_OK(c);
  // Every partition is owned by A or B until C takes some; C forwards the
  // rest, which fails at its TLS check and is held, then unavailable.
  std::string refused;
  for (int i = 0; i < 100 && refused.empty(); ++i) {
    const std::string key = "t" + std::to_string(i);
    const uint16_t owner = OwnerPort("notes", key);
    if (owner == 0 || owner == untrusting->port()) continue;
    auto v = (*c)->Get("notes", key);
    if (!v.ok()) refused = v.status().ToString();
  }
  EXPECT_NE(refused.find("unavailable"), std::string::npos) << refused;
}

TEST_F(ClusterTest, PeerLoginNeedsTheClusterSecret) {
  if (!fixture_) return;
  StartInstances(1);
  client::ClientOptions o;
  o.port = instances_[0]->port();
  o.user = "$cluster";
  o.secret = "not-the-cluster-secret-at-all";
  o.reconnect = false;
  auto refused = client::Client::Connect(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnauthorized) << refused.status().ToString();
  o.secret = kSecret;
  auto peer = client::Client::Connect(o);
  ASSERT_OK(peer);
  EXPECT_OK((*peer)->Set("notes", "from-a-peer", {{"v", 1}}));
}

// A relayed reply is the owner's text with the client's id put back: for a
// user who may write but not read, add loses `value` and delete `found`
// there as on the owner, and a reader's reply keeps them.
TEST_F(ClusterTest, RelayedRepliesTellAWriteOnlyUserWhatTheOwnerWould) {
  if (!fixture_) return;
  std::string writer_secret;
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "user", "add", "wo", "--write", "*"},
                                &writer_secret),
            0);
  StartInstances(2);
  // Keys owned by the second instance, reached through the first.
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < 20 && i < 2000; ++i) {
    const std::string key = "w" + std::to_string(i);
    if (OwnerPort("counters", key) == instances_[1]->port()) keys.push_back(key);
  }
  ASSERT_EQ(keys.size(), 20u);
  client::ClientOptions o;
  o.port = instances_[0]->port();
  o.user = "wo";
  o.secret = writer_secret;
  o.connections = 1;
  auto writer = client::Client::Connect(o);
  ASSERT_OK(writer);
  auto reader = Connect(instances_[0]->port(), 1);
  for (const std::string& key : keys) {
    client::Reply added = (*writer)->CallSync(AddOne(key));
    ASSERT_OK(added);
    EXPECT_FALSE(added->contains("value")) << added->dump();
    client::Reply read_added = reader->CallSync(AddOne(key));
    ASSERT_OK(read_added);
    EXPECT_EQ(read_added->at("value"), 2) << read_added->dump();
    client::Reply deleted =
        (*writer)->CallSync({{"op", "delete"}, {"table", "counters"}, {"key", key}});
    ASSERT_OK(deleted);
    EXPECT_FALSE(deleted->contains("found")) << deleted->dump();
    client::Reply read_deleted =
        reader->CallSync({{"op", "delete"}, {"table", "counters"}, {"key", key}});
    ASSERT_OK(read_deleted);
    EXPECT_EQ(read_deleted->at("found"), false) << read_deleted->dump();
  }
  // Watching needs read permission in cluster mode too, and a refused watch
  // makes no table watched across the cluster.
  client::Reply watched = (*writer)->CallSync({{"op", "watch"}, {"table", "counters"}});
  EXPECT_STATUS(watched.status(), kForbidden);
  EXPECT_EQ(Query("SELECT cardinality(watched) FROM skiff_watch_counter")[0][0].as<int>(), 0);
}

// Access is checked once, where a request arrives, whichever instance
// serves its key: a refusal reads the same for a key served there and for
// one relayed to its owner, in the words of a server without cluster mode.
TEST_F(ClusterTest, RefusalsReadAlikeWhereverTheKeyIsServed) {
  if (!fixture_) return;
  std::string reader_secret;
  ASSERT_EQ(
      support::RunCommand({SKIFF_PATH, "--store", url_, "user", "add", "ro", "--read", "notes"},
                          &reader_secret),
      0);
  StartInstances(2);
  // A key of each instance, asked through the first.
  std::map<uint16_t, std::string> key_of;
  for (int i = 0; key_of.size() < 2 && i < 2000; ++i) {
    const std::string key = "r" + std::to_string(i);
    key_of.emplace(OwnerPort("counters", key), key);
  }
  ASSERT_EQ(key_of.count(instances_[0]->port()), 1u);
  ASSERT_EQ(key_of.count(instances_[1]->port()), 1u);
  client::ClientOptions o;
  o.port = instances_[0]->port();
  o.user = "ro";
  o.secret = reader_secret;
  o.connections = 1;
  auto reader = client::Client::Connect(o);
  ASSERT_OK(reader);
  for (const auto& [owner, key] : key_of) {
    SCOPED_TRACE(key + ", owned by the instance on port " + std::to_string(owner));
    client::Reply read = (*reader)->CallSync({{"op", "get"}, {"table", "counters"}, {"key", key}});
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), StatusCode::kForbidden);
    EXPECT_EQ(read.status().message(), "user 'ro' may not read table 'counters'");
    client::Reply added = (*reader)->CallSync(AddOne(key));
    ASSERT_FALSE(added.ok());
    EXPECT_EQ(added.status().code(), StatusCode::kForbidden);
    EXPECT_EQ(added.status().message(), "user 'ro' may not write table 'counters'");
    EXPECT_OK((*reader)->CallSync({{"op", "get"}, {"table", "notes"}, {"key", key}}));
  }
}

// `stats` through each instance names it (the router's members, added to
// the request handler's reply).
// One change event as the wire carried it.
struct Seen {
  uint64_t version;
  std::string key;
  int64_t n;
  friend bool operator==(const Seen&, const Seen&) = default;
};

// The next `count` change events of `raw` (fewer if one does not come
// within RawSocket's wait); every frame must be a change event.
std::vector<Seen> ReadChanges(RawSocket& raw, size_t count) {
  std::vector<Seen> seen;
  while (seen.size() < count) {
    std::optional<doc::Value> frame = raw.Next();
    if (!frame) break;
    EXPECT_EQ((*frame)["event"], "change") << frame->dump();
    if ((*frame)["event"] != "change") break;
    seen.push_back({(*frame)["version"].get<uint64_t>(), (*frame)["key"].get<std::string>(),
                    (*frame)["value"]["n"].get<int64_t>()});
  }
  return seen;
}

// Watches across instances (docs/cluster.md, "watch across instances"): a
// watch on A gets the writes made through B and C, each key's changes in
// order with versions increasing, and a `since` taken from A resumes on B
// with the very same events.
TEST_F(ClusterTest, WatchOnOneSeesWritesThroughTheOthersAndResumesOnAnother) {
  if (!fixture_) return;
  StartInstances(3);
  doc::Value opened;
  auto watcher = RawWatch(instances_[0]->port(), R"("table":"counters")", &opened);
  const uint64_t start = opened["version"].get<uint64_t>();
  auto b = Connect(instances_[1]->port());
  auto c = Connect(instances_[2]->port());
  constexpr int kKeys = 6, kAdds = 40;
  std::vector<std::future<client::Reply>> replies;
  for (int i = 0; i < kAdds; ++i) {
    for (int k = 0; k < kKeys; ++k) {
      replies.push_back(((i + k) % 2 == 0 ? b : c)->Call(AddOne("k" + std::to_string(k))));
    }
  }
  for (auto& f : replies) ASSERT_OK(f.get());
  const std::vector<Seen> seen = ReadChanges(*watcher, kKeys * kAdds);
  ASSERT_EQ(seen.size(), size_t{kKeys * kAdds});
  std::map<std::string, int64_t> last;
  uint64_t previous = start;
  for (const Seen& e : seen) {
    EXPECT_GT(e.version, previous);
    previous = e.version;
    EXPECT_EQ(e.n, ++last[e.key]) << e.key << " skipped or repeated a value at " << e.version;
  }
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(last["k" + std::to_string(k)], kAdds);
  // Resumed on B from the middle of what A delivered: the same events.
  const size_t half = seen.size() / 2;
  doc::Value resumed;
  auto on_b =
      RawWatch(instances_[1]->port(),
               R"("table":"counters","since":)" + std::to_string(seen[half].version), &resumed);
  EXPECT_GE(resumed["version"].get<uint64_t>(), seen.back().version);
  const std::vector<Seen> rest = ReadChanges(*on_b, seen.size() - half - 1);
  EXPECT_EQ(rest,
            std::vector<Seen>(seen.begin() + static_cast<std::ptrdiff_t>(half) + 1, seen.end()));
  // Opened on C with the current values first: each key's last value,
  // read from the store, then ready at a version no older than the last
  // change A delivered.
  doc::Value with_initial;
  auto on_c =
      RawWatch(instances_[2]->port(), R"("table":"counters","initial":true)", &with_initial);
  std::map<std::string, int64_t> initial;
  for (int i = 0; i < kKeys; ++i) {
    std::optional<doc::Value> frame = on_c->Next();
    ASSERT_TRUE(frame.has_value());
    ASSERT_EQ((*frame)["event"], "initial") << frame->dump();
    initial[(*frame)["key"].get<std::string>()] = (*frame)["value"]["n"].get<int64_t>();
  }
  EXPECT_EQ(initial, last);
  std::optional<doc::Value> ready = on_c->Next();
  ASSERT_TRUE(ready.has_value());
  EXPECT_EQ((*ready)["event"], "ready") << ready->dump();
  EXPECT_GE((*ready)["version"].get<uint64_t>(), seen.back().version);
}

// The owner of a watched key is killed while writes to it go on through
// another instance: the watcher on a third gets every committed value once,
// the dead owner's last ones and then the new owner's, with no gap and no
// repeat, up to the value the store holds.
TEST_F(ClusterTest, WatchAcrossAKilledOwnerHasNoGapAndNoRepeat) {
  if (!fixture_) return;
  StartInstances(3);
  const std::string key = KeyOwnedBy("counters", "hot", *instances_[2]);
  ASSERT_FALSE(key.empty());
  doc::Value opened;
  auto watcher =
      RawWatch(instances_[0]->port(), R"("table":"counters","key":")" + key + "\"", &opened);
  auto through_b = Connect(instances_[1]->port());
  std::vector<std::future<client::Reply>> replies;
  for (int i = 0; i < 300; ++i) replies.push_back(through_b->Call(AddOne(key)));
  replies.front().wait();
  instances_[2]->Kill();
  for (int i = 0; i < 300; ++i) replies.push_back(through_b->Call(AddOne(key)));
  auto [acknowledged, failed] = Settle(replies);
  WaitBalanced();
  ASSERT_OK(through_b->CallSync(AddOne(key)));  // served by the new owner
  ++acknowledged;
  const std::optional<std::string> stored = Stored("counters", key);
  ASSERT_TRUE(stored.has_value());
  Result<doc::Value> parsed = doc::Parse(*stored);
  ASSERT_OK(parsed);
  const int64_t final_value = (*parsed)["n"].get<int64_t>();
  EXPECT_GE(final_value, acknowledged);
  EXPECT_LE(final_value, acknowledged + failed);
  const std::vector<Seen> seen = ReadChanges(*watcher, static_cast<size_t>(final_value));
  ASSERT_EQ(seen.size(), static_cast<size_t>(final_value));
  uint64_t previous = opened["version"].get<uint64_t>();
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].n, static_cast<int64_t>(i + 1)) << "at version " << seen[i].version;
    EXPECT_GT(seen[i].version, previous);
    previous = seen[i].version;
  }
  std::printf(
      "watch across a killed owner: %lld changes seen, %lld adds acknowledged, %lld failed\n",
      static_cast<long long>(seen.size()), static_cast<long long>(acknowledged),
      static_cast<long long>(failed));
}

// An instance frozen while more changes were logged than the log keeps
// (the others trim it) finds its next version gone when it thaws: its
// watches get a resync event, never a silent gap, then follow again.
TEST_F(ClusterTest, WatchOnAnInstanceThatFellBehindTheLogResyncs) {
  if (!fixture_) return;
  extra_flags_ = {"--watch-history=10"};  // the log keeps its floor, 1,000 versions
  StartInstances(2);
  const std::string key = KeyOwnedBy("counters", "far", *instances_[1]);
  ASSERT_FALSE(key.empty());
  doc::Value opened;
  auto watcher = RawWatch(instances_[0]->port(), R"("table":"counters")", &opened);
  auto b = Connect(instances_[1]->port());
  ASSERT_OK(b->CallSync(AddOne(key)));
  const std::vector<Seen> first = ReadChanges(*watcher, 1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(::kill(instances_[0]->pid(), SIGSTOP), 0);
  constexpr int kAdds = 1500;
  std::vector<std::future<client::Reply>> replies;
  for (int i = 0; i < kAdds; ++i) replies.push_back(b->Call(AddOne(key)));
  bool all_ok = true;
  for (auto& f : replies) all_ok = f.get().ok() && all_ok;
  // Thawed even if an assertion below fails, so the fixture can stop it.
  auto thaw = [&] { ::kill(instances_[0]->pid(), SIGCONT); };
  if (!all_ok) thaw();
  ASSERT_TRUE(all_ok);
  // B trims what it has read: the version after A's last is gone.
  const auto give_up = std::chrono::steady_clock::now() + seconds(60);
  while (Query("SELECT min(version) FROM skiff_watch_log")[0][0].as<uint64_t>() <=
         first[0].version + 1) {
    if (std::chrono::steady_clock::now() > give_up) thaw();
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the log was not trimmed";
    std::this_thread::sleep_for(milliseconds(50));
  }
  thaw();
  std::optional<doc::Value> frame = watcher->Next();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ((*frame)["event"], "resync") << frame->dump();
  EXPECT_GE((*frame)["version"].get<uint64_t>(), first[0].version + kAdds);
  ASSERT_OK(b->CallSync(AddOne(key)));
  const std::vector<Seen> after = ReadChanges(*watcher, 1);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].n, kAdds + 2);
}

TEST_F(ClusterTest, StatsThroughEachInstanceNameIt) {
  if (!fixture_) return;
  StartInstances(2);
  std::set<uint64_t> ids;
  for (const auto& p : instances_) {
    auto c = Connect(p->port(), 1);
    client::Reply stats = c->CallSync({{"op", "stats"}});
    ASSERT_OK(stats);
    ASSERT_TRUE(stats->contains("cluster")) << stats->dump();
    ids.insert(stats->at("cluster").at("instance").get<uint64_t>());
    EXPECT_GT(stats->at("cluster").at("partitions_served").get<uint64_t>(), 0u);
  }
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids.count(0), 0u);
}

}  // namespace
}  // namespace skiff::testing
