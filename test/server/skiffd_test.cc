// skiffd as a process: starts on an ephemeral port, serves, and on SIGTERM
// commits what it applied and exits 0.
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "client/client.h"
#include "server/users.h"
#include "store/store.h"
#include "support/skiffd_process.h"
#include "support/test_certs.h"

#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

class SkiffdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "skiffd-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    url_ = "sqlite:" + (dir_ / "skiff.db").string();
  }
  void TearDown() override {
    skiffd_.Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts skiffd on an ephemeral port; its port, 0 when it did not start.
  uint16_t Spawn() {
    Status started = skiffd_.Start(SKIFFD_PATH, {"--store=" + url_, "--io-threads", "1"});
    EXPECT_OK(started);
    return started.ok() ? skiffd_.port() : 0;
  }

  // Creates user "ops", who may read and write every table, in the server's
  // file; returns its secret ("" on failure).
  std::string AddOps() {
    auto store = store::OpenStore(url_);
    EXPECT_OK(store);
    if (!store.ok()) return "";
    auto created = server::CreateUser(**store, "ops", server::Permissions({"*"}, {"*"}));
    EXPECT_OK(created);
    return created.ok() ? *created : "";
  }

  // A client of the spawned server as `user`.
  static client::ClientOptions As(uint16_t port, const std::string& user,
                                  const std::string& secret) {
    client::ClientOptions o;
    o.port = port;
    o.user = user;
    o.secret = secret;
    return o;
  }

  std::filesystem::path dir_;
  std::string url_;
  support::SkiffdProcess skiffd_;
};

TEST_F(SkiffdTest, ServesAndStopsGracefullyOnSigterm) {
  const std::string secret = AddOps();
  ASSERT_FALSE(secret.empty());
  uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  {
    auto c = client::Client::Connect(As(port, "ops", secret));
    ASSERT_OK(c);
    ASSERT_OK((*c)->Set("t", "k", {{"saved", true}}));
    EXPECT_EQ(*(*c)->Add("t", "n", {}, 3), 3);
  }
  // SIGTERM, and the exit status must be 0.
  ASSERT_OK(skiffd_.Stop());

  auto store = store::OpenStore(url_);
  ASSERT_OK(store);
  auto k = (*store)->Get("t", "k");
  ASSERT_OK(k);
  ASSERT_TRUE(k->has_value());
  EXPECT_EQ(**k, R"({"saved":true})");
  auto n = (*store)->Get("t", "n");
  ASSERT_OK(n);
  ASSERT_TRUE(n->has_value());
  EXPECT_EQ(**n, "3");
}

TEST_F(SkiffdTest, AcknowledgedWritesSurviveKill9) {
  const std::string secret = AddOps();
  ASSERT_FALSE(secret.empty());
  uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  constexpr int kWrites = 400;
  int acked_adds = 0;
  std::vector<int> acked_keys;
  {
    client::ClientOptions o = As(port, "ops", secret);
    o.connections = 4;
    o.reconnect = false;  // after the kill, fail what is queued at once
    auto c = client::Client::Connect(o);
    ASSERT_OK(c);
    std::vector<std::future<client::Reply>> sets;
    std::vector<std::future<client::Reply>> adds;
    for (int i = 0; i < kWrites; ++i) {
      sets.push_back((*c)->Call(
          {{"op", "set"}, {"table", "t"}, {"key", "k" + std::to_string(i)}, {"value", i}}));
      adds.push_back((*c)->Call({{"op", "add"}, {"table", "t"}, {"key", "n"}, {"delta", 1}}));
      if (i == kWrites / 2) {
        // Kill while the second half is still in flight.
        for (int j = 0; j <= i; ++j) {
          if (sets[j].get().ok()) acked_keys.push_back(j);
          if (adds[j].get().ok()) ++acked_adds;
        }
        skiffd_.Kill();
      }
    }
    for (int j = kWrites / 2 + 1; j < kWrites; ++j) {
      if (sets[j].get().ok()) acked_keys.push_back(j);
      if (adds[j].get().ok()) ++acked_adds;
    }
  }
  ASSERT_GT(acked_adds, 0);
  auto store = store::OpenStore(url_);
  ASSERT_OK(store);
  for (int key : acked_keys) {
    auto v = (*store)->Get("t", "k" + std::to_string(key));
    ASSERT_OK(v) << "acknowledged write k" << key << " lost";
    ASSERT_TRUE(v->has_value()) << "acknowledged write k" << key << " lost";
    EXPECT_EQ(**v, std::to_string(key));
  }
  auto n = (*store)->Get("t", "n");
  ASSERT_OK(n);
  ASSERT_TRUE(n->has_value());
  // Every acknowledged add is in; unacknowledged ones may be too.
  EXPECT_GE(std::stoi(**n), acked_adds);
}

TEST_F(SkiffdTest, AdminCliCreatesAUserWhoCanLogIn) {
  std::string secret;
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "user", "add", "carol", "--read",
                                 "notes", "--write", "notes"},
                                &secret),
            0);
  ASSERT_EQ(secret.size(), 64u) << secret;

  uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  auto c = client::Client::Connect(As(port, "carol", secret));
  ASSERT_OK(c);
  EXPECT_OK((*c)->Set("notes", "n1", "hello"));
  EXPECT_EQ((*c)->Get("other", "x").status().code(), StatusCode::kForbidden);

  // A second add of the same name fails without printing a secret.
  std::string again;
  EXPECT_NE(support::RunCommand({SKIFF_PATH, "--store", url_, "user", "add", "carol"}, &again), 0);
  EXPECT_TRUE(again.empty()) << again;
}

TEST_F(SkiffdTest, AdminCliDeclaresAGeoIndexBuiltAtStart) {
  const std::string secret = AddOps();
  {
    auto store = store::OpenStore(url_);
    ASSERT_OK(store);
    ASSERT_OK((*store)->Put("shops", "near", R"({"pos":{"lat":1.0,"lon":2.0}})"));
    ASSERT_OK((*store)->Put("shops", "far", R"({"pos":{"lat":1.5,"lon":2.0}})"));
    ASSERT_OK((*store)->Put("shops", "nowhere", R"({"name":"x"})"));
  }
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "geo", "add", "shops", "--lat",
                                 "pos.lat", "--lon", "pos.lon"}),
            0);
  std::string listed;
  ASSERT_EQ(support::RunCommand({SKIFF_PATH, "--store", url_, "geo", "list"}, &listed), 0);
  EXPECT_EQ(listed, "shops\tlat pos.lat, lon pos.lon");
  // Half a declaration, or both kinds, is refused.
  EXPECT_NE(support::RunCommand({SKIFF_PATH, "--store", url_, "geo", "add", "t", "--lat", "a"}), 0);
  EXPECT_NE(support::RunCommand({SKIFF_PATH, "--store", url_, "geo", "add", "t", "--lat", "a",
                                 "--lon", "b", "--point", "c"}),
            0);
  EXPECT_NE(support::RunCommand({SKIFF_PATH, "--store", url_, "geo", "delete", "t"}), 0);

  uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  auto c = client::Client::Connect(As(port, "ops", secret));
  ASSERT_OK(c);
  auto reply = (*c)->CallSync({{"op", "near"}, {"table", "shops"}, {"lat", 1}, {"lon", 2}});
  ASSERT_OK(reply);
  ASSERT_EQ((*reply)["items"].size(), 2u);
  EXPECT_EQ((*reply)["items"][0]["key"], "near");
  EXPECT_EQ((*reply)["items"][1]["key"], "far");
  auto stats = (*c)->Stats();
  ASSERT_OK(stats);
  EXPECT_EQ((*stats)["geo"]["shops"]["points"], 2);
  EXPECT_EQ((*stats)["geo"]["shops"]["unindexed"], 1);
}

// `skiff call` against skiffd serving wss://: it trusts --tls-ca, checks
// the name in the URL, names a failed check (exit 6), and --insecure alone
// skips the check.
TEST_F(SkiffdTest, CallCliSpeaksWss) {
  const std::string secret = AddOps();
  ASSERT_FALSE(secret.empty());
  const support::TestCertFiles certs = support::WriteTestCertificates(dir_.string());
  ASSERT_OK(skiffd_.Start(SKIFFD_PATH, {"--store=" + url_, "--io-threads", "1", "--tls-cert",
                                        certs.cert, "--tls-key", certs.key}));
  const std::string port = std::to_string(skiffd_.port());
  // Runs `skiff call` as ops; its exit status, with stdout and stderr in `out`.
  const auto call = [&](const std::string& url, std::vector<std::string> args, std::string* out) {
    std::vector<std::string> argv = {SKIFF_PATH, "call", "--url", url, "--user", "ops"};
    argv.insert(argv.end(), args.begin(), args.end());
    Result<int> status = support::RunToEnd(argv, out, support::Process::Output::kStdoutAndStderr,
                                           {"SKIFF_SECRET=" + secret});
    return status.ok() ? *status : -1;
  };
  const std::string by_address = "wss://127.0.0.1:" + port;
  std::string out;
  ASSERT_EQ(
      call(by_address, {"--tls-ca", certs.ca, "set", "table=t", "key=k", "value={\"n\":1}"}, &out),
      0)
      << out;
  ASSERT_EQ(
      call("wss://localhost:" + port, {"--tls-ca", certs.ca, "get", "table=t", "key=k"}, &out), 0)
      << out;
  EXPECT_NE(out.find(R"("value":{"n":1})"), std::string::npos) << out;

  EXPECT_EQ(call(by_address, {"--tls-ca", certs.other_ca, "ping"}, &out), 6);
  EXPECT_NE(out.find("certificate verify failed: unable to get local issuer certificate"),
            std::string::npos)
      << out;
  // The system's store does not know the test root either.
  EXPECT_EQ(call(by_address, {"ping"}, &out), 6);
  EXPECT_NE(out.find("certificate verify failed"), std::string::npos) << out;
  EXPECT_EQ(call(by_address, {"--tls-ca", certs.other_ca, "--insecure", "ping"}, &out), 0) << out;
  // TLS settings on a ws:// URL are a usage error, not silently ignored.
  EXPECT_EQ(call("ws://127.0.0.1:" + port, {"--tls-ca", certs.ca, "ping"}, &out), 64) << out;
}

}  // namespace
}  // namespace skiff::testing
