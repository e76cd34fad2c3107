// Token sign-in over the wire, against a real skiffd child process started
// with key files made by Node's crypto: what a token's claim allows, each
// refusal with its message, and the session ending when the token expires.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>

#include "client/client.h"
#include "support/skiffd_process.h"

#include "test/auth/token_fixture.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using doc::Value;

class TokenLoginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { files_ = new TokenFiles(); }
  static void TearDownTestSuite() {
    delete files_;
    files_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(files_->ok()) << files_->why(); }
  void TearDown() override { skiffd_.Kill(); }

  // skiffd taking tokens by every kind of key; its port, 0 on failure.
  uint16_t SpawnWithKeys() {
    return Spawn({"--token-hs256-key", files_->Path("hs256.key"), "--token-public-key",
                  files_->Path("ec_public.pem"), "--token-jwks", files_->Path("jwks.json"),
                  "--token-audience", files_->audience(), "--token-issuer", files_->issuer(),
                  // No leeway: the session of a token ends at its exp.
                  "--token-leeway-s", "0"});
  }
  uint16_t Spawn(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--store=memory:", "--io-threads", "1"});
    Status started = skiffd_.Start(SKIFFD_PATH, flags);
    EXPECT_OK(started);
    return started.ok() ? skiffd_.port() : 0;
  }
  // A client on one connection that has not logged in.
  static std::unique_ptr<client::Client> Connect(uint16_t port) {
    client::ClientOptions o;
    o.port = port;
    auto c = client::Client::Connect(o);
    EXPECT_OK(c);
    if (!c.ok()) return nullptr;
    return std::move(*c);
  }
  static client::Reply Login(client::Client& c, const std::string& token_name) {
    return c.CallSync(Value{{"op", "login"}, {"token", files_->Token(token_name)}});
  }
  static client::Reply Get(client::Client& c, const std::string& table) {
    return c.CallSync(Value{{"op", "get"}, {"table", table}, {"key", "k"}});
  }
  static client::Reply Set(client::Client& c, const std::string& table) {
    return c.CallSync(Value{{"op", "set"}, {"table", table}, {"key", "k"}, {"value", 1}});
  }

  static TokenFiles* files_;
  support::SkiffdProcess skiffd_;
};

TokenFiles* TokenLoginTest::files_ = nullptr;

TEST_F(TokenLoginTest, ATokenGrantsWhatItsClaimSays) {
  const uint16_t port = SpawnWithKeys();
  ASSERT_NE(port, 0);
  // The claim: read t1 and t2, write t2.
  for (const char* name : {"hs256_ok", "es256_ok", "jwks_rsa_ok", "jwks_ec_ok"}) {
    auto c = Connect(port);
    ASSERT_NE(c, nullptr);
    ASSERT_OK(Login(*c, name)) << name;
    EXPECT_OK(Set(*c, "t2")) << name;
    EXPECT_OK(Get(*c, "t2")) << name;
    EXPECT_OK(Get(*c, "t1")) << name;
    client::Reply write_t1 = Set(*c, "t1");
    ASSERT_FALSE(write_t1.ok());
    EXPECT_EQ(write_t1.status().code(), StatusCode::kForbidden);
    EXPECT_EQ(write_t1.status().message(), "user 'alice' may not write table 't1'");
    client::Reply read_t3 = Get(*c, "t3");
    ASSERT_FALSE(read_t3.ok());
    EXPECT_EQ(read_t3.status().code(), StatusCode::kForbidden);
    // Logged in already.
    EXPECT_EQ(Login(*c, name).status().code(), StatusCode::kBadRequest);
  }
  // Without the claim: a session, and no table.
  auto c = Connect(port);
  ASSERT_NE(c, nullptr);
  ASSERT_OK(Login(*c, "no_claim"));
  EXPECT_EQ(Get(*c, "t1").status().code(), StatusCode::kForbidden);
  EXPECT_OK(c->CallSync(Value{{"op", "stats"}}));
}

TEST_F(TokenLoginTest, EachRefusalIsUnauthorizedWithItsMessage) {
  const uint16_t port = SpawnWithKeys();
  ASSERT_NE(port, 0);
  const std::string not_allowed = "token algorithm is not allowed for the configured key";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"expired", "token expired"},
      {"not_yet_valid", "token not yet valid"},
      {"wrong_audience", "token audience is wrong"},
      {"wrong_issuer", "token issuer is wrong"},
      {"bad_signature_hs256", "token signature is wrong"},
      {"bad_signature_es256", "token signature is wrong"},
      {"jwks_unknown_kid", "token key id (kid) is unknown"},
      {"alg_none", "token algorithm 'none' is refused"},
      {"alg_hs512", not_allowed},
      {"confusion_hs256_with_pem", "token signature is wrong"},
      {"rs256_ok", not_allowed},  // no kid: the PEM key is P-256
      {"malformed_base64_alphabet",
       "malformed token: the header is not base64url of a JSON object"},
      {"malformed_payload_json", "malformed token: the payload is not base64url of a JSON object"},
      {"oversized", "token is over the limit of 8192 bytes"},
      {"sub_dollar", "token subject (sub) is missing or not a valid user name"},
      {"sub_invalid_name", "token subject (sub) is missing or not a valid user name"},
  };
  for (const auto& [name, message] : cases) {
    auto c = Connect(port);
    ASSERT_NE(c, nullptr);
    client::Reply r = Login(*c, name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthorized) << name;
    EXPECT_EQ(r.status().message(), message) << name;
    // No session came of it.
    EXPECT_EQ(Get(*c, "t1").status().code(), StatusCode::kUnauthorized) << name;
  }
}

TEST_F(TokenLoginTest, ALoginTakesExactlyOneForm) {
  const uint16_t port = SpawnWithKeys();
  ASSERT_NE(port, 0);
  auto c = Connect(port);
  ASSERT_NE(c, nullptr);
  const std::string one_form = "login takes exactly one of two forms: user and secret, or token";
  client::Reply both = c->CallSync(Value{
      {"op", "login"}, {"user", "alice"}, {"secret", "x"}, {"token", files_->Token("hs256_ok")}});
  EXPECT_EQ(both.status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(both.status().message(), one_form);
  client::Reply neither = c->CallSync(Value{{"op", "login"}});
  EXPECT_EQ(neither.status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(neither.status().message(), one_form);
  client::Reply half = c->CallSync(Value{{"op", "login"}, {"user", "alice"}});
  EXPECT_EQ(half.status().code(), StatusCode::kBadRequest);
  EXPECT_OK(Login(*c, "hs256_ok"));
}

TEST_F(TokenLoginTest, TheSessionEndsWhenTheTokenExpires) {
  const uint16_t port = SpawnWithKeys();
  ASSERT_NE(port, 0);
  auto c = Connect(port);
  ASSERT_NE(c, nullptr);
  // Its exp is 8 s after the tokens were made; the server has no leeway.
  const int64_t exp = files_->now() + 8;
  ASSERT_OK(Login(*c, "short_lived"));
  // The server's clock: it reads expiry on CLOCK_REALTIME_COARSE, which lags
  // the precise clock by up to a tick. Once this reads exp, so does every
  // later read in the server; a precise clock could pass exp a few
  // milliseconds before the server's did, and the next request still pass.
  const auto unix_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return static_cast<int64_t>(ts.tv_sec);
  };
  client::Reply before = Get(*c, "t1");
  ASSERT_LT(unix_now(), exp) << "the machine took longer than the token's life to get here";
  EXPECT_OK(before);
  // Waits for the wall clock itself to pass exp: the condition under test.
  for (int i = 0; i < 300 && unix_now() < exp; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(unix_now(), exp);
  client::Reply after = Get(*c, "t1");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(after.status().message(), "token expired");
  // The session is over: the connection is logged out, and may log in anew.
  client::Reply next = Get(*c, "t1");
  EXPECT_EQ(next.status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(next.status().message(), "op 'get' needs a logged-in connection");
  EXPECT_OK(Login(*c, "hs256_ok"));
  EXPECT_OK(Get(*c, "t1"));
}

TEST_F(TokenLoginTest, AServerWithoutKeysTakesNoTokens) {
  const uint16_t port = Spawn({});
  ASSERT_NE(port, 0);
  auto c = Connect(port);
  ASSERT_NE(c, nullptr);
  client::Reply r = Login(*c, "hs256_ok");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(r.status().message(), "this server takes no tokens");
}

TEST_F(TokenLoginTest, ABadKeyFileStopsSkiffdAtStart) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--token-jwks", files_->Path("missing.json")},
        std::vector<std::string>{"--token-public-key", files_->Path("jwks.json")},
        std::vector<std::string>{"--token-jwks", files_->Path("bad.jwks.json")}}) {
    std::vector<std::string> argv = {SKIFFD_PATH, "--store=memory:", "--port", "0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::string first_line;
    EXPECT_NE(support::RunCommand(argv, &first_line), 0) << flags[1];
    EXPECT_EQ(first_line.find("listening"), std::string::npos) << first_line;
  }
}

}  // namespace
}  // namespace skiff::testing
