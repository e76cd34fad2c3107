// Every v1 op through the real stack: client -> WebSocket -> server ->
// SQLite file, plus pipelining, per-key order under contention and
// persistence across a restart.
#include <atomic>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test/server/raw_socket.h"
#include "test/server/server_fixture.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using doc::Value;

class ServerOpsTest : public ServerFixture {};

TEST_F(ServerOpsTest, PingAndEchoWorkBeforeLogin) {
  client::ClientOptions o = ClientOptionsFor("", "");
  client::Client& anon = Connect(o);
  EXPECT_OK(anon.Ping());
  Value data = {{"a", {1, 2, "three"}}, {"b", nullptr}};
  auto echoed = anon.Echo(data);
  ASSERT_OK(echoed);
  EXPECT_EQ(*echoed, data);
}

TEST_F(ServerOpsTest, SetGetHasDelete) {
  client::Client& c = Alice();
  auto missing = c.Get("t", "k");
  ASSERT_OK(missing);
  EXPECT_FALSE(missing->has_value());
  EXPECT_FALSE(*c.Has("t", "k"));

  Value v = {{"name", "skiff"}, {"n", 3}};
  ASSERT_OK(c.Set("t", "k", v));
  auto got = c.Get("t", "k");
  ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, v);
  EXPECT_TRUE(*c.Has("t", "k"));

  auto deleted = c.Delete("t", "k");
  ASSERT_OK(deleted);
  EXPECT_TRUE(*deleted);
  EXPECT_FALSE(*c.Delete("t", "k"));
  EXPECT_FALSE(c.Get("t", "k")->has_value());
  // The delete reached the store, not only memory.
  auto stored = store_->Get("t", "k");
  ASSERT_OK(stored);
  EXPECT_FALSE(stored->has_value());
}

TEST_F(ServerOpsTest, AddCreatesPathAndSums) {
  client::Client& c = Alice();
  auto first = c.Add("counters", "c1", {"a", "b"}, 5);
  ASSERT_OK(first);
  EXPECT_EQ(*first, 5);
  EXPECT_EQ(*c.Add("counters", "c1", {"a", "b"}, -2), 3);
  EXPECT_EQ(c.Add("counters", "c1", {}, 1).status().code(), StatusCode::kTypeMismatch);
  auto doc = c.Get("counters", "c1");
  ASSERT_OK(doc);
  EXPECT_EQ(**doc, (Value{{"a", {{"b", 3}}}}));
  auto whole = c.Add("counters", "plain", {}, 2.5);
  ASSERT_OK(whole);
  EXPECT_EQ(*whole, 2.5);
}

TEST_F(ServerOpsTest, MergeFollowsRfc7386) {
  client::Client& c = Alice();
  ASSERT_OK(c.Set("t", "m", {{"a", 1}, {"b", {{"c", 2}, {"d", 3}}}}));
  ASSERT_OK(c.Merge("t", "m", {{"a", nullptr}, {"b", {{"c", 20}}}, {"e", "new"}}));
  EXPECT_EQ(**c.Get("t", "m"), (Value{{"b", {{"c", 20}, {"d", 3}}}, {"e", "new"}}));
  // Merging into a missing document starts from nothing.
  ASSERT_OK(c.Merge("t", "fresh", {{"x", 1}}));
  EXPECT_EQ(**c.Get("t", "fresh"), (Value{{"x", 1}}));
}

// A document of 100,000 members written in descending key order, then merged
// with a patch that deletes half of them and adds 50,000 more, also in
// descending order. Objects keep their members in one sorted vector, so
// inserting them one at a time in this order would move every member after
// each one: on the order of 10^10 moves, far past RawSocket's 10 s wait.
// The server must take both whole and give back what nlohmann's std::map
// tree gives.
TEST_F(ServerOpsTest, LargeObjectsInDescendingKeyOrderAreSetMergedAndReadWhole) {
  constexpr int kMembers = 100'000;
  auto member = [](char prefix, int i, const std::string& value) {
    char name[16];
    std::snprintf(name, sizeof name, "%c%06d", prefix, i);
    return "\"" + std::string(name) + "\":" + value + ",";
  };
  std::string value = "{";
  std::string patch = "{";
  for (int i = kMembers - 1; i >= 0; --i) {
    value += member('k', i, std::to_string(i));
    patch += member('k', i, i % 2 == 0 ? "null" : i % 3 == 0 ? "{\"x\":null,\"y\":1}" : "-1");
    if (i % 2 == 0) patch += member('j', i, "\"new\"");
  }
  value.back() = '}';
  patch.back() = '}';

  RawSocket raw(server_->port());
  ASSERT_TRUE(raw.WaitOpen());
  Value login = {{"id", 0}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}};
  ASSERT_EQ((*raw.Exchange(login.dump()))["ok"], true);
  std::optional<Value> set =
      raw.Exchange(R"({"id":1,"op":"set","table":"t","key":"big","value":)" + value + "}");
  ASSERT_TRUE(set.has_value());
  ASSERT_EQ((*set)["ok"], true) << set->dump();
  std::optional<Value> merged =
      raw.Exchange(R"({"id":2,"op":"merge","table":"t","key":"big","patch":)" + patch + "}");
  ASSERT_TRUE(merged.has_value());
  ASSERT_EQ((*merged)["ok"], true) << merged->dump();
  std::optional<Value> got = raw.Exchange(R"({"id":3,"op":"get","table":"t","key":"big"})");
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ((*got)["ok"], true);

  nlohmann::json oracle = nlohmann::json::parse(value);
  oracle.merge_patch(nlohmann::json::parse(patch));
  ASSERT_EQ(oracle.size(), static_cast<size_t>(kMembers));
  EXPECT_TRUE(doc::Dump((*got)["value"]) == oracle.dump());
}

TEST_F(ServerOpsTest, AllPagesInKeyOrder) {
  client::Client& c = Alice();
  for (int i = 0; i < 25; ++i) {
    char key[8];
    std::snprintf(key, sizeof key, "k%02d", i);
    ASSERT_OK(c.Set("paged", key, i));
  }
  std::vector<std::string> keys;
  std::string after;
  for (int pages = 0; pages < 10; ++pages) {
    auto page = c.All("paged", after, 10);
    ASSERT_OK(page);
    for (const auto& item : page->items) {
      EXPECT_EQ(item.value, std::stoi(item.key.substr(1)));
      keys.push_back(item.key);
    }
    if (!page->next) break;
    after = *page->next;
  }
  ASSERT_EQ(keys.size(), 25u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  auto empty = c.All("nothing-here");
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->items.empty());
  EXPECT_FALSE(empty->next.has_value());
}

TEST_F(ServerOpsTest, StatsReportsTiersConnectionsSessions) {
  client::Client& c = Alice();
  ASSERT_OK(c.Set("t", "k", "v"));
  auto stats = c.Stats();
  ASSERT_OK(stats);
  EXPECT_GE((*stats)["tiers"]["hot"]["documents"].get<int>(), 1);
  EXPECT_GT((*stats)["tiers"]["hot"]["bytes"].get<int>(), 0);
  EXPECT_GE((*stats)["connections"].get<int>(), 1);
  EXPECT_GE((*stats)["sessions"].get<int>(), 1);
}

TEST_F(ServerOpsTest, LogoutEndsTheSession) {
  client::ClientOptions o = ClientOptionsFor("", "");
  client::Client& c = Connect(o);
  auto login = c.CallSync({{"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}});
  ASSERT_OK(login);
  EXPECT_OK(c.Has("t", "k"));
  ASSERT_OK(c.CallSync({{"op", "logout"}}));
  EXPECT_EQ(c.Has("t", "k").status().code(), StatusCode::kUnauthorized);
}

TEST_F(ServerOpsTest, PipelinedRepliesMatchTheirRequests) {
  client::Client& c = Alice(1, 256);
  constexpr int kRequests = 2000;
  std::vector<std::future<client::Reply>> replies;
  replies.reserve(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    replies.push_back(c.Call({{"op", "echo"}, {"data", i}}));
  }
  for (int i = 0; i < kRequests; ++i) {
    client::Reply r = replies[i].get();
    ASSERT_OK(r);
    EXPECT_EQ((*r)["data"], i);
  }
}

TEST_F(ServerOpsTest, ContendedAddsOnOneKeyLoseNothing) {
  constexpr int kConnections = 16;
  constexpr int kAddsEach = 2000;
  client::Client& c = Alice(kConnections, 32);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      // Each thread keeps a window of adds in flight across the pool.
      std::vector<std::future<client::Reply>> window;
      for (int i = 0; i < kConnections * kAddsEach / 4; ++i) {
        window.push_back(c.Call(
            {{"op", "add"}, {"table", "hot"}, {"key", "counter"}, {"path", {"n"}}, {"delta", 1}}));
        if (window.size() == 128) {
          for (auto& f : window) failures += f.get().ok() ? 0 : 1;
          window.clear();
        }
      }
      for (auto& f : window) failures += f.get().ok() ? 0 : 1;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto value = c.Get("hot", "counter");
  ASSERT_OK(value);
  EXPECT_EQ((**value)["n"], kConnections * kAddsEach);
  // And the store holds the same number (commit durability).
  auto stored = store_->Get("hot", "counter");
  ASSERT_OK(stored);
  ASSERT_TRUE(stored->has_value());
  EXPECT_EQ(Value::parse(**stored)["n"], kConnections * kAddsEach);
}

TEST_F(ServerOpsTest, DataSurvivesARestartOnTheSameFile) {
  {
    client::Client& c = Alice();
    ASSERT_OK(c.Set("keep", "a", {{"x", 1}}));
    ASSERT_OK(c.Add("keep", "n", {}, 41));
    ASSERT_OK(c.Add("keep", "n", {}, 1));
    ASSERT_OK(c.Set("keep", "gone", 1));
    ASSERT_OK(c.Delete("keep", "gone"));
  }
  clients_.clear();
  StopServer();
  store_.reset();
  OpenStore();
  StartServer();
  client::Client& c = Alice();
  EXPECT_EQ(**c.Get("keep", "a"), (Value{{"x", 1}}));
  EXPECT_EQ(**c.Get("keep", "n"), 42);
  EXPECT_FALSE(c.Get("keep", "gone")->has_value());
}

TEST_F(ServerOpsTest, MemoryDurabilityFlushesWithinTheInterval) {
  StopServer();
  options_.durability = server::Durability::kMemory;
  options_.flush_interval = std::chrono::milliseconds(20);
  StartServer();
  client::Client& c = Alice();
  ASSERT_OK(c.Set("mem", "k", 7));
  // Stop flushes whatever the interval has not written yet.
  clients_.clear();
  StopServer();
  auto stored = store_->Get("mem", "k");
  ASSERT_OK(stored);
  ASSERT_TRUE(stored->has_value());
  EXPECT_EQ(**stored, "7");
  StartServer();
}

// Memory mode writes each document's state as it is when flushed, once per
// flush however often it changed: the store must end with the last state of
// every key, across many flushes and every kind of write.
TEST_F(ServerOpsTest, MemoryDurabilityStoresTheLastStateOfEveryKey) {
  StopServer();
  options_.durability = server::Durability::kMemory;
  options_.flush_interval = std::chrono::milliseconds(2);
  StartServer();
  client::Client& c = Alice();
  constexpr int kAdds = 600;
  for (int i = 1; i <= kAdds; ++i) {
    ASSERT_EQ(*c.Add("mem", "counter", {"n"}, 1), i);
    if (i % 100 == 0) {
      ASSERT_OK(c.Set("mem", "doc", Value{{"round", i}, {"keep", true}}));
      ASSERT_OK(c.Merge("mem", "doc", Value{{"keep", nullptr}}));
      ASSERT_OK(c.Set("mem", "brief", i));
      ASSERT_TRUE(*c.Delete("mem", "brief"));
    }
  }
  clients_.clear();
  StopServer();
  auto counter = store_->Get("mem", "counter");
  ASSERT_OK(counter);
  ASSERT_TRUE(counter->has_value());
  EXPECT_EQ(Value::parse(**counter), (Value{{"n", kAdds}}));
  auto doc = store_->Get("mem", "doc");
  ASSERT_OK(doc);
  ASSERT_TRUE(doc->has_value());
  EXPECT_EQ(Value::parse(**doc), (Value{{"round", kAdds}}));
  auto brief = store_->Get("mem", "brief");
  ASSERT_OK(brief);
  EXPECT_FALSE(brief->has_value());
  StartServer();
}

TEST_F(ServerOpsTest, IdleConnectionsAreClosed) {
  StopServer();
  options_.idle_timeout = std::chrono::milliseconds(50);
  StartServer();
  RawSocket raw(server_->port());
  ASSERT_TRUE(raw.WaitOpen());
  auto pong = raw.Exchange(R"({"id":1,"op":"ping"})");
  ASSERT_TRUE(pong.has_value());
  EXPECT_TRUE(raw.WaitClosed());
}

}  // namespace
}  // namespace skiff::testing
