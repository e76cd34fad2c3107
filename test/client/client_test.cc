// The SDK against the real server: typed errors, pooling, timeouts,
// overload, reconnection.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test/server/server_fixture.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using doc::Value;

// Holds every store write until opened, so writes stay in flight as long as
// a test needs.
class GateStore : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Status Write(const store::WriteBatch& batch) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
    lock.unlock();
    return StoreWrapper::Write(batch);
  }
  void Set(bool open) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = open;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;  // guarded by mu_
};

class ClientTest : public ServerFixture {};

TEST_F(ClientTest, ErrorsCarryTheWireCodeAndMessage) {
  auto bob = server::CreateUser(*store_, "bob", server::Permissions({"b"}, {"b"}));
  ASSERT_OK(bob);
  client::Client& c = Connect(ClientOptionsFor("bob", *bob));
  Status s = c.Set("other", "k", 1);
  EXPECT_EQ(s.code(), StatusCode::kForbidden);
  EXPECT_NE(s.message().find("other"), std::string::npos) << s;
  auto bad = c.CallSync({{"op", "nope"}});
  EXPECT_EQ(bad.status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(c.CallSync(Value::array()).status().code(), StatusCode::kBadRequest);
}

TEST_F(ClientTest, CallbacksAndFuturesBothDeliver) {
  client::Client& c = Alice(4, 8);
  std::promise<client::Reply> via_callback;
  c.Call({{"op", "echo"}, {"data", "cb"}},
         [&](client::Reply r) { via_callback.set_value(std::move(r)); });
  auto via_future = c.Call({{"op", "echo"}, {"data", "fut"}});
  EXPECT_EQ((*via_callback.get_future().get())["data"], "cb");
  EXPECT_EQ((*via_future.get())["data"], "fut");
}

// CallText hands back a reply's text as it came, in both forms, and an
// error reply as its status.
TEST_F(ClientTest, TextCallsDeliverTheReplyTextOrTheError) {
  client::Client& c = Alice(2, 8);
  auto text = c.CallTextSync({{"op", "echo"}, {"data", {{"b", 1}, {"a", "x"}}}});
  ASSERT_OK(text);
  EXPECT_NE(text->find(R"("data":{"a":"x","b":1})"), std::string::npos) << *text;
  EXPECT_EQ(Value::parse(*text)["ok"], true) << *text;

  std::promise<Result<std::string>> echoed, refused;
  std::atomic<int> calls{0};
  c.CallText({{"op", "echo"}, {"data", "cb"}}, [&](Result<std::string> t) {
    ++calls;
    echoed.set_value(std::move(t));
  });
  c.CallText({{"op", "nope"}}, [&](Result<std::string> t) {
    ++calls;
    refused.set_value(std::move(t));
  });
  Result<std::string> ok = echoed.get_future().get();
  ASSERT_OK(ok);
  EXPECT_EQ(Value::parse(*ok)["data"], "cb");
  EXPECT_EQ(refused.get_future().get().status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(calls.load(), 2);  // a second run would set a promise twice and throw
}

TEST_F(ClientTest, ACallersIdDoesNotConfuseReplies) {
  client::Client& c = Alice();
  auto reply = c.CallSync({{"id", 999}, {"op", "echo"}, {"data", 5}});
  ASSERT_OK(reply);
  EXPECT_EQ((*reply)["data"], 5);
}

TEST_F(ClientTest, PoolOpensEveryConnection) {
  client::Client& c = Alice(4, 8);
  std::vector<std::future<client::Reply>> replies;
  for (int i = 0; i < 100; ++i) replies.push_back(c.Call({{"op", "ping"}}));
  for (auto& r : replies) EXPECT_OK(r.get());
  auto stats = c.Stats();
  ASSERT_OK(stats);
  EXPECT_EQ((*stats)["connections"], 4);
  EXPECT_EQ((*stats)["sessions"], 4);
}

TEST_F(ClientTest, UnreachableServerFailsConnectWithUnavailable) {
  client::ClientOptions o = ClientOptionsFor("", "");
  StopServer();  // the port is now closed
  o.connect_timeout = std::chrono::seconds(5);
  auto c = client::Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  StartServer();
}

class GatedClientTest : public ClientTest {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    StopServer();
    gate_ = std::make_unique<GateStore>(*store_);
    wrapper_ = gate_.get();
    options_.max_in_flight = 2;
    StartServer();
  }
  void TearDown() override {
    gate_->Set(true);
    ServerFixture::TearDown();
  }
  std::unique_ptr<GateStore> gate_;
};

TEST_F(GatedClientTest, RequestWithoutReplyTimesOut) {
  client::ClientOptions o = ClientOptionsFor("alice", alice_secret_);
  o.request_timeout = std::chrono::milliseconds(200);
  client::Client& c = Connect(o);
  gate_->Set(false);
  Status s = c.Set("t", "k", 1);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("no reply"), std::string::npos) << s;
  gate_->Set(true);
  // The connection is still good and the write itself did happen.
  EXPECT_EQ(**c.Get("t", "k"), 1);
}

TEST_F(GatedClientTest, WritesPastTheInFlightLimitWaitInsteadOfBeingRefused) {
  client::Client& c = Alice(1, 8);
  gate_->Set(false);
  std::vector<std::future<client::Reply>> writes;
  for (int i = 0; i < 3; ++i) {
    writes.push_back(c.Call({{"op", "set"}, {"table", "t"}, {"key", "k"}, {"value", i}}));
  }
  // Two are held by the store; the server stops reading the connection
  // until one is answered, so the third waits instead of being refused.
  // Other connections are served meanwhile.
  client::Client& other = Alice(1, 8);
  EXPECT_OK(other.Ping());
  gate_->Set(true);
  for (auto& w : writes) {
    client::Reply r = w.get();
    EXPECT_OK(r);
  }
  EXPECT_EQ(**c.Get("t", "k"), 2);
}

TEST_F(GatedClientTest, StopDrainsWritesInFlight) {
  client::Client& c = Alice(1, 8);
  gate_->Set(false);
  auto write = c.Call({{"op", "set"}, {"table", "t"}, {"key", "drained"}, {"value", 1}});
  // Wait (bounded) until the write is held by the store.
  for (int i = 0; i < 200 && server_; ++i) {
    auto stats = c.Stats();
    if (stats.ok() && (*stats)["writes"] == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::thread stopper([&] { StopServer(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  gate_->Set(true);
  stopper.join();
  client::Reply reply = write.get();
  EXPECT_OK(reply);
  auto stored = store_->Get("t", "drained");
  ASSERT_OK(stored);
  ASSERT_TRUE(stored->has_value());
  StartServer();
}

TEST_F(ClientTest, ReconnectsAfterTheServerComesBack) {
  client::ClientOptions o = ClientOptionsFor("alice", alice_secret_);
  o.connections = 2;
  o.request_timeout = std::chrono::milliseconds(500);
  client::Client& c = Connect(o);
  ASSERT_OK(c.Set("t", "k", "before"));
  uint16_t port = server_->port();
  StopServer();
  EXPECT_EQ(c.Ping().code(), StatusCode::kUnavailable);
  options_.port = port;
  auto server = server::Server::Start(options_, *store_, clock_);
  ASSERT_OK(server);
  server_ = std::move(*server);
  // Reconnection is asynchronous: allow it a bounded number of tries.
  Status last;
  for (int i = 0; i < 100; ++i) {
    auto got = c.Get("t", "k");
    if (got.ok()) {
      EXPECT_EQ(**got, "before");
      return;
    }
    last = got.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL() << "no reconnection: " << last;
}

}  // namespace
}  // namespace skiff::testing
