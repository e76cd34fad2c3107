// watch / unwatch against a real server over real WebSockets: the wire is
// checked with bare peers (RawSocket reads everything; WsPeer can stop
// reading), the writes come through the SDK.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test/server/raw_socket.h"
#include "test/server/server_fixture.h"
#include "test/server/watch_events.h"
#include "test/server/ws_peer.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

class WatchTest : public ServerFixture {
 protected:
  void SetUp() override {
    options_.watch_history = 8;
    options_.max_watches_per_connection = 3;
    options_.watch_coalesce_bytes = 4096;
    options_.watch_queue_bytes = 64 * 1024;
    ServerFixture::SetUp();
  }

  std::string Secret(const std::string& user, server::Permissions permissions) {
    Result<std::string> secret = server::CreateUser(*store_, user, std::move(permissions));
    EXPECT_OK(secret);
    return secret.ok() ? *secret : "";
  }

  // A bare WebSocket logged in as `user`.
  std::unique_ptr<RawSocket> Raw(const std::string& user, const std::string& secret) {
    auto raw = std::make_unique<RawSocket>(server_->port());
    EXPECT_TRUE(raw->WaitOpen());
    auto reply = raw->Exchange(R"({"id":1,"op":"login","user":")" + user + R"(","secret":")" +
                               secret + R"("})");
    EXPECT_TRUE(reply && (*reply)["ok"] == true) << (reply ? reply->dump() : "no reply");
    return raw;
  }
  std::unique_ptr<RawSocket> RawAlice() { return Raw("alice", alice_secret_); }

  // Opens a watch; returns the reply.
  static doc::Value Watch(RawSocket& raw, uint64_t id, const std::string& fields) {
    auto reply =
        raw.Exchange(R"({"id":)" + std::to_string(id) + R"(,"op":"watch",)" + fields + "}");
    EXPECT_TRUE(reply.has_value());
    return reply ? *reply : doc::Value();
  }

  // The next event frame (skipping nothing: every frame is checked).
  static doc::Value NextEvent(RawSocket& raw) {
    auto frame = raw.Next();
    EXPECT_TRUE(frame.has_value()) << "no event within the wait";
    return frame ? *frame : doc::Value();
  }
};

TEST_F(WatchTest, KeyEventsCarryWatchKeyValueAndVersion) {
  auto raw = RawAlice();
  doc::Value opened = Watch(*raw, 2, R"("table":"t","key":"k")");
  ASSERT_EQ(opened["ok"], true) << opened.dump();
  ASSERT_EQ(opened["id"], 2);
  const uint64_t watch = opened["watch"].get<uint64_t>();
  const uint64_t start = opened["version"].get<uint64_t>();

  client::Client& writer = Alice();
  ASSERT_OK(writer.Set("t", "other", doc::Value{{"x", 0}}));  // not watched
  ASSERT_OK(writer.Set("t", "k", doc::Value{{"x", 1}}));
  doc::Value e = NextEvent(*raw);
  EXPECT_EQ(e["event"], "change") << e.dump();
  EXPECT_EQ(e["watch"], watch);
  EXPECT_EQ(e["table"], "t");
  EXPECT_EQ(e["key"], "k");
  EXPECT_EQ(e["value"], (doc::Value{{"x", 1}}));
  EXPECT_FALSE(e.contains("id"));
  const uint64_t v1 = e["version"].get<uint64_t>();
  EXPECT_GT(v1, start);

  ASSERT_OK(writer.Delete("t", "k").status());
  e = NextEvent(*raw);
  EXPECT_EQ(e["deleted"], true) << e.dump();
  EXPECT_FALSE(e.contains("value"));
  EXPECT_GT(e["version"].get<uint64_t>(), v1);
}

TEST_F(WatchTest, PrefixAndTableWatchesAndInitialValues) {
  client::Client& writer = Alice();
  ASSERT_OK(writer.Set("t", "a/1", doc::Value(1)));
  ASSERT_OK(writer.Set("t", "a/2", doc::Value(2)));
  ASSERT_OK(writer.Set("t", "b/1", doc::Value(3)));
  auto raw = RawAlice();
  doc::Value opened = Watch(*raw, 2, R"("table":"t","prefix":"a/","initial":true)");
  ASSERT_EQ(opened["ok"], true) << opened.dump();
  doc::Value e = NextEvent(*raw);
  EXPECT_EQ(e["event"], "initial");
  EXPECT_EQ(e["key"], "a/1");
  EXPECT_EQ(e["value"], 1);
  e = NextEvent(*raw);
  EXPECT_EQ(e["key"], "a/2");
  e = NextEvent(*raw);
  EXPECT_EQ(e["event"], "ready") << e.dump();

  doc::Value whole = Watch(*raw, 3, R"("table":"t")");
  ASSERT_EQ(whole["ok"], true) << whole.dump();
  ASSERT_OK(writer.Set("t", "b/2", doc::Value(4)));  // the table's watch only
  ASSERT_OK(writer.Set("t", "a/3", doc::Value(5)));  // both
  e = NextEvent(*raw);
  EXPECT_EQ(e["watch"], whole["watch"]);
  EXPECT_EQ(e["key"], "b/2");
  doc::Value first = NextEvent(*raw);
  doc::Value second = NextEvent(*raw);
  EXPECT_EQ(first["key"], "a/3");
  EXPECT_EQ(second["key"], "a/3");
  EXPECT_NE(first["watch"], second["watch"]);
  EXPECT_EQ(first["version"], second["version"]);
}

TEST_F(WatchTest, ConcurrentWritersArriveInCommitOrderPerKey) {
  auto raw = RawAlice();
  ASSERT_EQ(Watch(*raw, 2, R"("table":"n")")["ok"], true);
  constexpr int kWriters = 4;
  constexpr int kAdds = 150;
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w) {
    client::Client& c = Alice();
    writers.emplace_back([&c, &failures, w] {
      for (int i = 0; i < kAdds; ++i) {
        if (!c.Add("n", "hot", {}, doc::Value(1)).ok()) ++failures;
        if (!c.Set("n", "own" + std::to_string(w), doc::Value(i)).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  ASSERT_EQ(failures.load(), 0);

  // Every event's version is above the one before (per connection), and
  // each key's values only grow (its commit order); a coalesced change
  // may skip values, never go back.
  uint64_t last_version = 0;
  int64_t hot = 0;
  std::vector<int64_t> own(kWriters, -1);
  int events = 0;
  while (hot < kWriters * kAdds && events < 10 * kWriters * kAdds) {
    doc::Value e = NextEvent(*raw);
    ASSERT_EQ(e["event"], "change") << e.dump();
    ++events;
    const uint64_t v = e["version"].get<uint64_t>();
    ASSERT_GT(v, last_version);
    last_version = v;
    const std::string key = e["key"].get<std::string>();
    const int64_t value = e["value"].get<int64_t>();
    if (key == "hot") {
      ASSERT_GT(value, hot);
      hot = value;
    } else {
      const int w = key.back() - '0';
      ASSERT_GT(value, own[w]);
      own[w] = value;
    }
  }
  EXPECT_EQ(hot, kWriters * kAdds);
}

TEST_F(WatchTest, ResumesWithSinceAndResyncsPastTheHistory) {
  client::Client& writer = Alice();
  uint64_t seen = 0;
  {
    auto raw = RawAlice();
    ASSERT_EQ(Watch(*raw, 2, R"("table":"r")")["ok"], true);
    ASSERT_OK(writer.Set("r", "a", doc::Value(0)));
    seen = NextEvent(*raw)["version"].get<uint64_t>();
  }
  // Missed while away: fewer than the history holds (8).
  for (int i = 1; i <= 5; ++i) ASSERT_OK(writer.Set("r", "k" + std::to_string(i), doc::Value(i)));
  {
    auto raw = RawAlice();
    doc::Value opened = Watch(*raw, 2, R"("table":"r","since":)" + std::to_string(seen));
    ASSERT_EQ(opened["ok"], true) << opened.dump();
    uint64_t last = seen;
    for (int i = 1; i <= 5; ++i) {
      doc::Value e = NextEvent(*raw);
      ASSERT_EQ(e["event"], "change") << e.dump();
      EXPECT_EQ(e["key"], "k" + std::to_string(i));  // no gap, in order
      EXPECT_EQ(e["value"], i);
      EXPECT_GT(e["version"].get<uint64_t>(), last);
      last = e["version"].get<uint64_t>();
    }
    EXPECT_EQ(last, opened["version"].get<uint64_t>());
  }
  // More than the history holds: resync, never a silent gap.
  for (int i = 0; i < 20; ++i) ASSERT_OK(writer.Set("r", "x", doc::Value(i)));
  auto raw = RawAlice();
  doc::Value opened = Watch(*raw, 2, R"("table":"r","since":)" + std::to_string(seen));
  ASSERT_EQ(opened["ok"], true);
  doc::Value e = NextEvent(*raw);
  EXPECT_EQ(e["event"], "resync") << e.dump();
  EXPECT_EQ(e["watch"], opened["watch"]);
  // A since from the future (another run of the server) resyncs too.
  doc::Value later = Watch(*raw, 3, R"("table":"r","since":999999)");
  EXPECT_EQ(NextEvent(*raw)["event"], "resync");
  auto stats = writer.Stats();
  ASSERT_OK(stats);
  EXPECT_EQ((*stats)["watch"]["resyncs"], 2);
  EXPECT_LE((*stats)["watch"]["history_changes"].get<uint64_t>(), 8u);
}

TEST_F(WatchTest, UnwatchStopsEventsAndLimitsAreRefusedInWords) {
  auto raw = RawAlice();
  doc::Value a = Watch(*raw, 2, R"("table":"u","key":"a")");
  doc::Value b = Watch(*raw, 3, R"("table":"u","key":"b")");
  ASSERT_EQ(a["ok"], true);
  ASSERT_EQ(b["ok"], true);
  doc::Value c = Watch(*raw, 4, R"("table":"u","key":"c")");
  ASSERT_EQ(c["ok"], true);
  doc::Value refused = Watch(*raw, 5, R"("table":"u","key":"d")");
  EXPECT_EQ(refused["error"]["code"], "bad_request") << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("most watches"), std::string::npos);
  doc::Value both = Watch(*raw, 6, R"("table":"u","key":"a","prefix":"a")");
  EXPECT_EQ(both["error"]["code"], "bad_request") << both.dump();

  auto done = raw->Exchange(R"({"id":7,"op":"unwatch","watch":)" + a["watch"].dump() + "}");
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["ok"], true) << done->dump();
  auto again = raw->Exchange(R"({"id":8,"op":"unwatch","watch":)" + a["watch"].dump() + "}");
  EXPECT_EQ((*again)["error"]["code"], "bad_request");

  client::Client& writer = Alice();
  ASSERT_OK(writer.Set("u", "a", doc::Value(1)));  // unwatched: no event
  ASSERT_OK(writer.Set("u", "b", doc::Value(2)));
  // Events come in version order, so one for "a" would come first.
  doc::Value e = NextEvent(*raw);
  EXPECT_EQ(e["key"], "b") << e.dump();
  EXPECT_EQ(e["watch"], b["watch"]);

  // The place the first watch left is taken by the next one, which gets
  // its events beside the others', and the limit counts it again.
  doc::Value d = Watch(*raw, 9, R"("table":"u","key":"d")");
  ASSERT_EQ(d["ok"], true) << d.dump();
  doc::Value over = Watch(*raw, 10, R"("table":"u","key":"e")");
  EXPECT_EQ(over["error"]["code"], "bad_request") << over.dump();
  ASSERT_OK(writer.Set("u", "d", doc::Value(3)));
  ASSERT_OK(writer.Set("u", "c", doc::Value(4)));
  doc::Value for_d = NextEvent(*raw);
  EXPECT_EQ(for_d["key"], "d") << for_d.dump();
  EXPECT_EQ(for_d["watch"], d["watch"]);
  doc::Value for_c = NextEvent(*raw);
  EXPECT_EQ(for_c["key"], "c") << for_c.dump();
  EXPECT_EQ(for_c["watch"], c["watch"]);
}

TEST_F(WatchTest, NeedsReadPermissionOnTheTable) {
  const std::string writer_only = Secret("wo", server::Permissions({}, {"t"}));
  const std::string other = Secret("other", server::Permissions({"o"}, {"o"}));
  auto w = Raw("wo", writer_only);
  EXPECT_EQ(Watch(*w, 2, R"("table":"t")")["error"]["code"], "forbidden");
  auto o = Raw("other", other);
  EXPECT_EQ(Watch(*o, 2, R"("table":"t","key":"k")")["error"]["code"], "forbidden");
  EXPECT_EQ(Watch(*o, 3, R"("table":"o","key":"k")")["ok"], true);
  RawSocket anonymous(server_->port());
  ASSERT_TRUE(anonymous.WaitOpen());
  EXPECT_EQ(Watch(anonymous, 2, R"("table":"t")")["error"]["code"], "unauthorized");
}

TEST_F(WatchTest, LogoutEndsTheWatches) {
  auto raw = RawAlice();
  doc::Value opened = Watch(*raw, 2, R"("table":"t")");
  ASSERT_EQ(opened["ok"], true);
  raw->SendText(R"({"id":3,"op":"logout"})");
  doc::Value ended = NextEvent(*raw);
  EXPECT_EQ(ended["event"], "ended") << ended.dump();
  EXPECT_EQ(ended["reason"], "logout");
  EXPECT_EQ(ended["watch"], opened["watch"]);
  EXPECT_EQ(NextEvent(*raw)["id"], 3);
  // Logged in again, a write reaches no watch of the old session.
  auto login =
      raw->Exchange(R"({"id":4,"op":"login","user":"alice","secret":")" + alice_secret_ + R"("})");
  ASSERT_EQ((*login)["ok"], true);
  client::Client& writer = Alice();
  ASSERT_OK(writer.Set("t", "k", doc::Value(1)));
  auto pong = raw->Exchange(R"({"id":5,"op":"ping"})");
  EXPECT_EQ((*pong)["id"], 5) << pong->dump();
  auto stats = writer.Stats();
  ASSERT_OK(stats);
  EXPECT_EQ((*stats)["watch"]["watches"], 0);
}

// A client that stops reading: its changes coalesce per key, then its watch
// ends with overflow; the server's memory for it stays bounded all along.
TEST_F(WatchTest, ClientThatDoesNotReadCoalescesThenOverflows) {
  WsPeer peer;
  peer.set_receive_buffer(4096);
  ASSERT_TRUE(peer.Open(server_->port()));
  ASSERT_TRUE(
      peer.SendText(R"({"id":1,"op":"login","user":"alice","secret":")" + alice_secret_ + R"("})"));
  auto login = peer.NextText();
  ASSERT_TRUE(login.has_value());
  ASSERT_TRUE(peer.SendText(R"({"id":2,"op":"watch","table":"c"})"));
  auto opened = peer.NextText();
  ASSERT_TRUE(opened && opened->find("\"ok\":true") != std::string::npos) << *opened;

  client::Client& writer = Alice();
  const std::string pad(1000, 'p');
  auto watch_stats = [&]() -> doc::Value {
    auto stats = writer.Stats();
    EXPECT_OK(stats);
    return stats.ok() ? *stats : doc::Value();
  };
  // One key written over and over: once the socket is full the changes
  // coalesce, so the queue stays small. Bounded in writes, not in time.
  doc::Value stats;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 100; ++i) {
      ASSERT_OK(writer.Set("c", "one", doc::Value{{"i", round * 100 + i}, {"p", pad}}));
    }
    stats = watch_stats();
    if (stats["watch"]["coalesced"].get<uint64_t>() > 100) break;
  }
  EXPECT_GT(stats["watch"]["coalesced"].get<uint64_t>(), 100u) << stats["watch"].dump();
  EXPECT_EQ(stats["watch"]["overflows"], 0) << stats["watch"].dump();
  EXPECT_LE(stats["watch"]["queued_bytes"].get<uint64_t>(), 64u * 1024);
  // The socket's own queue stays near the coalescing threshold (4 KiB).
  EXPECT_LE(stats["network"]["buffered_output_bytes"].get<uint64_t>(), 64u * 1024);

  // Distinct keys cannot coalesce: once the kernel's socket buffers are
  // full (up to tcp_wmem's maximum, 4 MiB here, which it may grow to) the
  // queue reaches its bound (64 KiB, some 64 changes) and the watch ends.
  for (int i = 0; i < 20000; ++i) {
    ASSERT_OK(writer.Set("c", "k" + std::to_string(i), doc::Value{{"p", pad}}));
    if (i % 50 == 49 && watch_stats()["watch"]["overflows"] == 1) break;
  }
  stats = watch_stats();
  EXPECT_EQ(stats["watch"]["overflows"], 1) << stats["watch"].dump();
  EXPECT_EQ(stats["watch"]["watches"], 0);
  EXPECT_LE(stats["watch"]["queued_bytes"].get<uint64_t>(), 64u * 1024);
  EXPECT_LE(stats["network"]["buffered_output_bytes"].get<uint64_t>(), 64u * 1024);

  // Reading now: changes in increasing versions, then the overflow.
  ASSERT_NO_FATAL_FAILURE(ExpectChangesThenOverflow(peer, 100000));
}

// The SDK's watch: events by callback, and a reconnect resumes it by itself
// (the server restarted, so its `since` is from another run: resync).
TEST_F(WatchTest, SdkWatchResumesAcrossAReconnect) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<client::WatchEvent> events;
  auto wait_for = [&](const std::function<bool(const client::WatchEvent&)>& pred) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] {
      for (const client::WatchEvent& e : events) {
        if (pred(e)) return true;
      }
      return false;
    });
  };
  client::Client& watcher = Alice();
  client::WatchTarget target;
  target.key = "k";
  target.initial = true;
  Result<uint64_t> handle = watcher.Watch("s", target, [&](const client::WatchEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
    cv.notify_all();
  });
  ASSERT_OK(handle);
  ASSERT_TRUE(wait_for([](const client::WatchEvent& e) { return e.kind == "ready"; }));
  client::Client& writer = Alice();
  ASSERT_OK(writer.Set("s", "k", doc::Value(1)));
  ASSERT_TRUE(wait_for(
      [](const client::WatchEvent& e) { return e.kind == "change" && e.value == doc::Value(1); }));

  const uint16_t port = server_->port();
  StopServer();
  options_.port = port;
  auto restarted = server::Server::Start(options_, *store_, clock_);
  ASSERT_OK(restarted);
  server_ = std::move(*restarted);
  ASSERT_TRUE(wait_for([](const client::WatchEvent& e) { return e.kind == "resync"; }));
  // Live again on the new connection: a write after the resync arrives.
  client::Client& after = Connect(ClientOptionsFor("alice", alice_secret_));
  ASSERT_OK(after.Set("s", "k", doc::Value(2)));
  ASSERT_TRUE(wait_for(
      [](const client::WatchEvent& e) { return e.kind == "change" && e.value == doc::Value(2); }));

  ASSERT_OK(watcher.Unwatch(*handle));
  auto stats = after.Stats();
  ASSERT_OK(stats);
  EXPECT_EQ((*stats)["watch"]["watches"], 0);
  EXPECT_EQ(watcher.Unwatch(*handle).code(), StatusCode::kBadRequest);
}

// `skiff call watch` prints one JSON line per event and stops at --count.
TEST_F(WatchTest, CliPrintsEventsUntilCount) {
  client::Client& writer = Alice();
  ASSERT_OK(writer.Set("cli", "k", doc::Value(1)));
  const std::string command =
      std::string(SKIFF_PATH) + " call --url ws://127.0.0.1:" + std::to_string(server_->port()) +
      " --user alice --secret " + alice_secret_ + " --count 3 watch table=cli key=k initial=true";
  FILE* out = popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  auto line = [&]() -> doc::Value {
    char buffer[4096];
    if (std::fgets(buffer, sizeof buffer, out) == nullptr) return doc::Value();
    auto parsed = doc::Parse(buffer, doc::kNoLimits);
    return parsed.ok() ? *parsed : doc::Value(buffer);
  };
  doc::Value first = line();
  EXPECT_EQ(first["event"], "initial") << first.dump();
  EXPECT_EQ(first["value"], 1);
  doc::Value ready = line();
  EXPECT_EQ(ready["event"], "ready") << ready.dump();
  // The watch is open once `ready` is printed.
  ASSERT_OK(writer.Set("cli", "k", doc::Value(2)));
  doc::Value change = line();
  EXPECT_EQ(change["event"], "change") << change.dump();
  EXPECT_EQ(change["key"], "k");
  EXPECT_EQ(change["value"], 2);
  EXPECT_GT(change["version"].get<uint64_t>(), 0u);
  const int status = pclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Memory durability pushes a change once applied (what the writer was
// told); a key's events still follow its order under concurrent writers.
class WatchMemoryTest : public ServerFixture {
 protected:
  void SetUp() override {
    options_.durability = server::Durability::kMemory;
    ServerFixture::SetUp();
  }
};

TEST_F(WatchMemoryTest, EventsFollowEachKeysOrder) {
  RawSocket raw(server_->port());
  ASSERT_TRUE(raw.WaitOpen());
  auto login =
      raw.Exchange(R"({"id":1,"op":"login","user":"alice","secret":")" + alice_secret_ + R"("})");
  ASSERT_EQ((*login)["ok"], true);
  auto opened = raw.Exchange(R"({"id":2,"op":"watch","table":"m","key":"n"})");
  ASSERT_EQ((*opened)["ok"], true) << opened->dump();
  constexpr int kWriters = 3;
  constexpr int kAdds = 100;
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w) {
    client::Client& c = Alice();
    writers.emplace_back([&c, &failures] {
      for (int i = 0; i < kAdds; ++i) {
        if (!c.Add("m", "n", {}, doc::Value(1)).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  ASSERT_EQ(failures.load(), 0);
  int64_t last = 0;
  uint64_t last_version = 0;
  for (int i = 0; i < kWriters * kAdds && last < kWriters * kAdds; ++i) {
    auto e = raw.Next();
    ASSERT_TRUE(e.has_value());
    ASSERT_EQ((*e)["event"], "change") << e->dump();
    ASSERT_GT((*e)["value"].get<int64_t>(), last);
    ASSERT_GT((*e)["version"].get<uint64_t>(), last_version);
    last = (*e)["value"].get<int64_t>();
    last_version = (*e)["version"].get<uint64_t>();
  }
  EXPECT_EQ(last, kWriters * kAdds);
}

}  // namespace
}  // namespace skiff::testing
