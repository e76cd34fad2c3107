// The server over a store that hangs or fails (a fault-injecting wrapper of a
// real SQLite store): a store call that never returns must not stop pings,
// reads of documents in memory or new connections; memory durability must
// stop acknowledging writes once its unflushed backlog is over its bound,
// take writes again when the store recovers, lose none of those it
// acknowledged, and at a stop name the writes it could not write rather
// than drop them silently.
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "doc/document.h"

#include "test/server/server_fixture.h"
#include "test/server/ws_peer.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using doc::Value;
using std::chrono::milliseconds;

// Reads and writes either pass, hang until released, or fail.
class FaultyStore : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  enum class Mode { kPass, kHang, kFail };

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    if (Status s = Gate(reads_); !s.ok()) return s;
    return StoreWrapper::Get(table, key);
  }
  Status Write(const store::WriteBatch& batch) override {
    SKIFF_RETURN_IF_ERROR(Gate(writes_));
    return StoreWrapper::Write(batch);
  }
  void SetReads(Mode m) { Set(reads_, m); }
  void SetWrites(Mode m) { Set(writes_, m); }
  // Calls that are hanging right now.
  int hanging() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hanging_;
  }

 private:
  Status Gate(const Mode& mode) {
    std::unique_lock<std::mutex> lock(mu_);
    ++hanging_;
    cv_.wait(lock, [&] { return mode != Mode::kHang; });
    --hanging_;
    if (mode == Mode::kFail) return Unavailable("injected: the disk is full");
    return Status::Ok();
  }
  void Set(Mode& target, Mode m) {
    std::lock_guard<std::mutex> lock(mu_);
    target = m;
    cv_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Mode reads_ = Mode::kPass;   // guarded by mu_
  Mode writes_ = Mode::kPass;  // guarded by mu_
  int hanging_ = 0;            // guarded by mu_
};

class FailingStoreTest : public ServerFixture {
 protected:
  void SetUp() override {}

  // Starts the server on the faulty wrapper of the fixture's store.
  void Start() {
    ServerFixture::SetUp();
    StopServer();
    faulty_ = std::make_unique<FaultyStore>(*store_);
    wrapper_ = faulty_.get();
    StartServer();
  }
  void TearDown() override {
    if (faulty_) {
      faulty_->SetReads(FaultyStore::Mode::kPass);
      faulty_->SetWrites(FaultyStore::Mode::kPass);
    }
    ServerFixture::TearDown();
  }

  std::unique_ptr<WsPeer> LoggedIn() {
    auto p = std::make_unique<WsPeer>();
    std::string why;
    EXPECT_TRUE(p->Open(server_->port(), &why)) << why;
    Value login = {{"id", 1}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}};
    EXPECT_TRUE(p->SendText(login.dump()));
    EXPECT_EQ(p->NextText(), R"({"id":1,"ok":true})");
    return p;
  }

  // Waits (bounded) until `n` store calls hang.
  bool WaitHanging(int n) {
    for (int i = 0; i < 3000; ++i) {
      if (faulty_->hanging() >= n) return true;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return false;
  }

  std::unique_ptr<FaultyStore> faulty_;
};

TEST_F(FailingStoreTest, AHangingStoreReadDoesNotStopTheServer) {
  Start();
  auto writer = LoggedIn();
  auto cold = LoggedIn();
  auto other = LoggedIn();
  ASSERT_TRUE(writer->SendText(R"({"id":2,"op":"set","table":"t","key":"hot","value":1})"));
  ASSERT_EQ(writer->NextText(), R"({"id":2,"ok":true})");
  faulty_->SetReads(FaultyStore::Mode::kHang);
  // A read of a document not in memory, and a login, both wait for the
  // store, on a store worker.
  ASSERT_TRUE(cold->SendText(R"({"id":3,"op":"get","table":"t","key":"cold"})"));
  WsPeer late;
  ASSERT_TRUE(late.Open(server_->port()));
  Value login = {{"id", 4}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}};
  ASSERT_TRUE(late.SendText(login.dump()));
  ASSERT_TRUE(WaitHanging(1));
  // Meanwhile: pings, a read of a document in memory, and a new connection.
  ASSERT_TRUE(other->SendText(R"({"id":5,"op":"ping"})"));
  EXPECT_EQ(other->NextText(), R"({"id":5,"ok":true})");
  ASSERT_TRUE(other->SendText(R"({"id":6,"op":"get","table":"t","key":"hot"})"));
  EXPECT_EQ(other->NextText(), R"({"id":6,"ok":true,"found":true,"value":1})");
  WsPeer fresh;
  EXPECT_TRUE(fresh.Open(server_->port()));
  // The held requests are answered once the store answers.
  faulty_->SetReads(FaultyStore::Mode::kPass);
  EXPECT_EQ(cold->NextText(), R"({"id":3,"ok":true,"found":false})");
  EXPECT_EQ(late.NextText(), R"({"id":4,"ok":true})");
}

TEST_F(FailingStoreTest, RequestsAfterOneWaitingForTheStoreKeepTheirOrder) {
  Start();
  ASSERT_OK(store_->Write([] {
    store::WriteBatch b;
    b.Put("t", "cold", "{\"n\":1}");
    return b;
  }()));
  auto p = LoggedIn();
  faulty_->SetReads(FaultyStore::Mode::kHang);
  // The add must read the document from the store first; the get after it
  // on the same connection must see the add.
  ASSERT_TRUE(p->SendRaw(
      WsPeer::Frame(0x81,
                    R"({"id":2,"op":"add","table":"t","key":"cold","path":["n"],"delta":5})") +
      WsPeer::Frame(0x81, R"({"id":3,"op":"get","table":"t","key":"cold"})")));
  ASSERT_TRUE(WaitHanging(1));
  faulty_->SetReads(FaultyStore::Mode::kPass);
  // Replies may come in any order (the add's waits for its commit); what
  // matters is that the get took effect after the add.
  std::set<std::string> replies;
  for (int i = 0; i < 2; ++i) {
    std::optional<std::string> reply = p->NextText();
    ASSERT_TRUE(reply.has_value());
    replies.insert(*reply);
  }
  EXPECT_EQ(replies, (std::set<std::string>{R"({"id":2,"ok":true,"value":6})",
                                            R"({"id":3,"ok":true,"found":true,"value":{"n":6}})"}));
}

TEST_F(FailingStoreTest, MemoryDurabilityRefusesWritesPastItsBacklogAndLosesNone) {
  options_.durability = server::Durability::kMemory;
  options_.flush_interval = milliseconds(10);
  options_.max_unflushed_bytes = 64 * 1024;
  Start();
  faulty_->SetWrites(FaultyStore::Mode::kFail);
  auto p = LoggedIn();
  const std::string value = std::string(1000, 'v');
  int acknowledged = 0, refused = 0;
  for (int i = 0; i < 200; ++i) {
    Value set = {{"id", 10 + i},
                 {"op", "set"},
                 {"table", "t"},
                 {"key", "k" + std::to_string(i)},
                 {"value", value}};
    ASSERT_TRUE(p->SendText(set.dump()));
    std::optional<std::string> reply = p->NextText();
    ASSERT_TRUE(reply.has_value());
    Value r = Value::parse(*reply);
    if (r["ok"] == true) {
      ++acknowledged;
    } else {
      EXPECT_EQ(r["error"]["code"], "unavailable") << *reply;
      ++refused;
    }
  }
  // 64 KiB of 1 KB documents: about 64 acknowledged, the rest refused.
  EXPECT_GT(acknowledged, 0);
  EXPECT_LT(acknowledged, 80);
  EXPECT_EQ(acknowledged + refused, 200);
  // The store recovers: the backlog drains and writes are taken again.
  faulty_->SetWrites(FaultyStore::Mode::kPass);
  bool taken = false;
  for (int attempt = 0; attempt < 500 && !taken; ++attempt) {
    ASSERT_TRUE(p->SendText(R"({"id":999,"op":"set","table":"t","key":"after","value":1})"));
    std::optional<std::string> reply = p->NextText();
    taken = reply && Value::parse(*reply)["ok"] == true;
    if (!taken) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(taken);
  StopServer();
  // Every acknowledged write is in the store.
  int stored = 0;
  for (int i = 0; i < 200; ++i) {
    auto v = store_->Get("t", "k" + std::to_string(i));
    ASSERT_OK(v);
    if (v->has_value()) ++stored;
  }
  EXPECT_EQ(stored, acknowledged);
}

TEST_F(FailingStoreTest, AStopThatCannotWriteNamesWhatWasLost) {
  options_.durability = server::Durability::kMemory;
  options_.flush_interval = milliseconds(10);
  options_.stop_grace = milliseconds(300);
  Start();
  faulty_->SetWrites(FaultyStore::Mode::kFail);
  auto p = LoggedIn();
  ASSERT_TRUE(p->SendText(R"({"id":2,"op":"set","table":"t","key":"doomed","value":1})"));
  ASSERT_EQ(p->NextText(), R"({"id":2,"ok":true})");
  p.reset();
  Status stopped = server_->Stop();
  server_.reset();
  EXPECT_FALSE(stopped.ok());
  EXPECT_NE(stopped.message().find("t/doomed"), std::string::npos) << stopped;
  EXPECT_NE(stopped.message().find("acknowledged"), std::string::npos) << stopped;
}

TEST_F(FailingStoreTest, AWriteOnlyUserLearnsNeitherSumsNorExistence) {
  Start();
  auto secret = server::CreateUser(*store_, "meter", server::Permissions({}, {"counters"}));
  ASSERT_OK(secret);
  WsPeer p;
  ASSERT_TRUE(p.Open(server_->port()));
  Value login = {{"id", 1}, {"op", "login"}, {"user", "meter"}, {"secret", *secret}};
  ASSERT_TRUE(p.SendText(login.dump()));
  ASSERT_EQ(p.NextText(), R"({"id":1,"ok":true})");
  ASSERT_TRUE(
      p.SendText(R"({"id":2,"op":"add","table":"counters","key":"c","path":[],"delta":3})"));
  EXPECT_EQ(p.NextText(), R"({"id":2,"ok":true})");
  ASSERT_TRUE(
      p.SendText(R"({"id":3,"op":"add","table":"counters","key":"c","path":[],"delta":0})"));
  EXPECT_EQ(p.NextText(), R"({"id":3,"ok":true})");
  ASSERT_TRUE(p.SendText(R"({"id":4,"op":"delete","table":"counters","key":"nothing"})"));
  EXPECT_EQ(p.NextText(), R"({"id":4,"ok":true})");
  ASSERT_TRUE(p.SendText(R"({"id":5,"op":"get","table":"counters","key":"c"})"));
  std::optional<std::string> denied = p.NextText();
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ(Value::parse(*denied)["error"]["code"], "forbidden");
  // The adds did happen.
  auto stored = Alice().CallSync({{"op", "get"}, {"table", "counters"}, {"key", "c"}});
  ASSERT_OK(stored);
  EXPECT_EQ((*stored)["value"], 3);
}

}  // namespace
}  // namespace skiff::testing
