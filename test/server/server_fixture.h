// A real server on 127.0.0.1 (ephemeral port) over a real SQLite file in a
// fresh temporary directory, with helpers to create users and connect
// clients. Used by the server and client integration tests. Not thread-safe:
// drive it from the test's main thread.
#ifndef SKIFF_TEST_SERVER_SERVER_FIXTURE_H_
#define SKIFF_TEST_SERVER_SERVER_FIXTURE_H_

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "base/clock.h"
#include "client/client.h"
#include "server/server.h"
#include "server/users.h"
#include "store/store.h"

#include "test/status_matchers.h"

namespace skiff::testing {

class ServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "skiff-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    OpenStore();
    StartServer();
    Result<std::string> secret =
        server::CreateUser(*store_, "alice", server::Permissions({"*"}, {"*"}));
    ASSERT_OK(secret);
    alice_secret_ = *secret;
  }

  void TearDown() override {
    clients_.clear();
    StopServer();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void OpenStore() {
    auto store = store::OpenSqliteStore((dir_ / "skiff.db").string());
    ASSERT_OK(store);
    store_ = std::move(*store);
  }

  void StartServer() {
    options_.port = 0;
    options_.io_threads = 2;
    auto server = server::Server::Start(options_, wrapper_ ? *wrapper_ : *store_, clock_);
    ASSERT_OK(server);
    server_ = std::move(*server);
  }

  void StopServer() {
    if (server_) {
      EXPECT_OK(server_->Stop());
      server_.reset();
    }
  }

  client::ClientOptions ClientOptionsFor(const std::string& user, const std::string& secret) {
    client::ClientOptions o;
    o.port = server_->port();
    o.user = user;
    o.secret = secret;
    o.request_timeout = std::chrono::seconds(30);
    return o;
  }

  // A client logged in as alice (every table); owned by the fixture.
  client::Client& Alice(size_t connections = 1, size_t in_flight = 32) {
    client::ClientOptions o = ClientOptionsFor("alice", alice_secret_);
    o.connections = connections;
    o.max_in_flight = in_flight;
    return Connect(o);
  }

  // Polls stats until `pred` holds for its "tiers" (at most 1,000 times, 10
  // ms apart): the tier sweeper runs on its own thread, so a test waits for
  // what it moved rather than for a time.
  static bool WaitForTiers(client::Client& c, const std::function<bool(const doc::Value&)>& pred) {
    for (int i = 0; i < 1000; ++i) {
      auto stats = c.Stats();
      if (stats.ok() && pred((*stats)["tiers"])) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  client::Client& Connect(const client::ClientOptions& o) {
    auto c = client::Client::Connect(o);
    EXPECT_OK(c);
    if (!c.ok()) std::abort();
    clients_.push_back(std::move(*c));
    return *clients_.back();
  }

  std::filesystem::path dir_;
  SystemClock clock_;
  server::ServerOptions options_;
  std::unique_ptr<store::Store> store_;
  // When set, the server runs on this store (which wraps store_) instead.
  store::Store* wrapper_ = nullptr;
  std::unique_ptr<server::Server> server_;
  std::string alice_secret_;
  std::vector<std::unique_ptr<client::Client>> clients_;
};

}  // namespace skiff::testing

#endif  // SKIFF_TEST_SERVER_SERVER_FIXTURE_H_
