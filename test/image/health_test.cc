// `skiff health`, the image's HEALTHCHECK: its URL parsing, and the built
// CLI against a real skiffd (exit 0 while it serves, 1 once it is gone, 2
// for bad usage).
#include "cmd/health.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "support/skiffd_process.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

#include "test/status_matchers.h"

namespace skiff::cmd {
namespace {

TEST(ParseWsUrlTest, TakesHostAndPortWithOrWithoutTheSlash) {
  auto a = ParseWsUrl("ws://127.0.0.1:7420/");
  ASSERT_OK(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7420);
  auto b = ParseWsUrl("ws://skiffd:1");
  ASSERT_OK(b);
  EXPECT_EQ(b->host, "skiffd");
  EXPECT_EQ(b->port, 1);
  auto v6 = ParseWsUrl("ws://[::1]:65535/");
  ASSERT_OK(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 65535);
  EXPECT_FALSE(v6->tls);
  auto tls = ParseWsUrl("wss://db.example.com:443/");
  ASSERT_OK(tls);
  EXPECT_EQ(tls->host, "db.example.com");
  EXPECT_EQ(tls->port, 443);
  EXPECT_TRUE(tls->tls);
}

TEST(ParseWsUrlTest, RejectsWhatItCannotPing) {
  for (const char* url :
       {"", "ws://", "http://127.0.0.1:7420/", "wss:/127.0.0.1:7420/", "ws://127.0.0.1/",
        "ws://127.0.0.1:/", "ws://127.0.0.1:0/", "ws://127.0.0.1:65536/", "ws://127.0.0.1:74x/",
        "ws://127.0.0.1:7420/healthz", "ws://:7420/", "ws://[::1]/", "ws://::1:7420/",
        "wss://[]:7420/"}) {
    EXPECT_STATUS(ParseWsUrl(url), kBadRequest) << url;
  }
}

TEST(DefaultHealthUrlTest, FollowsTheServersEnvironment) {
  EXPECT_EQ(DefaultHealthUrl("", ""), "ws://127.0.0.1:7420/");
  EXPECT_EQ(DefaultHealthUrl("0.0.0.0", "7500"), "ws://127.0.0.1:7500/");
  EXPECT_EQ(DefaultHealthUrl("10.1.2.3", ""), "ws://10.1.2.3:7420/");
  EXPECT_EQ(DefaultHealthUrl("::", "1"), "ws://[::1]:1/");
  EXPECT_EQ(DefaultHealthUrl("fd00::7", "2"), "ws://[fd00::7]:2/");
  EXPECT_EQ(DefaultHealthUrl("0.0.0.0", "7500", true), "wss://127.0.0.1:7500/");
  for (const auto& [address, port] : {std::pair{"", ""}, {"0.0.0.0", "7500"}, {"::", "1"}}) {
    EXPECT_OK(ParseWsUrl(DefaultHealthUrl(address, port)));
  }
}

int Health(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SKIFF_PATH, "health"};
  argv.insert(argv.end(), args.begin(), args.end());
  return support::RunCommand(argv);
}

TEST(SkiffHealthTest, ExitsZeroWhileTheServerAnswersAndOneWhenItIsGone) {
  support::SkiffdProcess server;
  ASSERT_OK(server.Start(SKIFFD_PATH, {"--store", "memory:", "--address", "127.0.0.1"}));
  const std::string url = "ws://127.0.0.1:" + std::to_string(server.port()) + "/";
  EXPECT_EQ(Health({"--url", url}), 0);
  ASSERT_OK(server.Stop());
  EXPECT_EQ(Health({"--url", url, "--timeout-ms", "2000"}), 1);
}

TEST(SkiffHealthTest, WithoutUrlAsksThePortInSkiffPort) {
  support::SkiffdProcess server;
  ASSERT_OK(server.Start(SKIFFD_PATH, {"--store", "memory:", "--address", "127.0.0.1"}));
  ASSERT_EQ(setenv("SKIFF_PORT", std::to_string(server.port()).c_str(), 1), 0);
  const int status = Health({});
  unsetenv("SKIFF_PORT");
  EXPECT_EQ(status, 0);
  ASSERT_OK(server.Stop());
}

TEST(SkiffHealthTest, SpeaksTlsToATlsServer) {
  support::TempDir dir;
  const support::TestCertFiles certs = support::WriteTestCertificates(dir.path().string());
  support::SkiffdProcess server;
  ASSERT_OK(server.Start(SKIFFD_PATH, {"--store", "memory:", "--address", "127.0.0.1", "--tls-cert",
                                       certs.cert, "--tls-key", certs.key}));
  const std::string url = "wss://127.0.0.1:" + std::to_string(server.port()) + "/";
  EXPECT_EQ(Health({"--url", url, "--tls-ca", certs.ca}), 0);
  EXPECT_EQ(Health({"--url", url, "--tls-ca", certs.other_ca}), 1);  // not trusted
  EXPECT_EQ(Health({"--url", "ws://127.0.0.1:" + std::to_string(server.port()) + "/"}), 1);
  EXPECT_EQ(Health({"--url", "ws://127.0.0.1:1/", "--insecure"}), 2);
  // The image's HEALTHCHECK: no URL, the server's own environment.
  ASSERT_EQ(setenv("SKIFF_PORT", std::to_string(server.port()).c_str(), 1), 0);
  ASSERT_EQ(setenv("SKIFF_TLS_CERT", certs.cert.c_str(), 1), 0);
  const int status = Health({});
  unsetenv("SKIFF_PORT");
  unsetenv("SKIFF_TLS_CERT");
  EXPECT_EQ(status, 0);
  ASSERT_OK(server.Stop());
}

TEST(SkiffHealthTest, BadUsageExitsTwo) {
  EXPECT_EQ(Health({"--url"}), 2);
  EXPECT_EQ(Health({"--url", "http://127.0.0.1:1/"}), 2);
  EXPECT_EQ(Health({"--timeout-ms", "0"}), 2);
  EXPECT_EQ(Health({"--verbose"}), 2);
}

}  // namespace
}  // namespace skiff::cmd
