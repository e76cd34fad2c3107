// The token verifier against tokens signed by Node's crypto: every form it
// takes, and every refusal with its message.
#include "server/auth/token_verifier.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "server/auth/base64url.h"

#include "test/auth/token_fixture.h"
#include "test/status_matchers.h"

namespace skiff::server::auth {
namespace {

using skiff::testing::TokenFiles;

class TokenVerifierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { files_ = new TokenFiles(); }
  static void TearDownTestSuite() {
    delete files_;
    files_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(files_->ok()) << files_->why(); }

  // Settings checking the fixture's audience and issuer, with the given
  // key files.
  static TokenSettings Settings(const std::string& hs256, const std::string& pem,
                                const std::string& jwks) {
    TokenSettings s;
    if (!hs256.empty()) s.hs256_key_file = files_->Path(hs256);
    if (!pem.empty()) s.public_key_file = files_->Path(pem);
    if (!jwks.empty()) s.jwks_file = files_->Path(jwks);
    s.audience = files_->audience();
    s.issuer = files_->issuer();
    return s;
  }
  static std::shared_ptr<const TokenVerifier> Load(const TokenSettings& s) {
    auto v = LoadTokenVerifier(s);
    EXPECT_OK(v);
    return v.ok() ? *v : nullptr;
  }
  static std::shared_ptr<const TokenVerifier> Hs() { return Load(Settings("hs256.key", "", "")); }
  static std::shared_ptr<const TokenVerifier> Rsa() {
    return Load(Settings("", "rsa_public.pem", ""));
  }
  static std::shared_ptr<const TokenVerifier> Ec() {
    return Load(Settings("", "ec_public.pem", ""));
  }
  static std::shared_ptr<const TokenVerifier> Jwks() { return Load(Settings("", "", "jwks.json")); }

  // The refusal of token `name` (its message), or "ok".
  static std::string Outcome(const std::shared_ptr<const TokenVerifier>& v, const std::string& name,
                             int64_t now = 0) {
    if (v == nullptr) return "no verifier";
    const std::string token = files_->Token(name);
    if (token.empty()) return "no token " + name;
    Result<VerifiedToken> r = v->Verify(token, now != 0 ? now : files_->now());
    if (r.ok()) return "ok";
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthorized) << name;
    EXPECT_EQ(r.status().message().find(token), std::string::npos) << "echoes the token";
    return r.status().message();
  }

  static TokenFiles* files_;
};

TokenFiles* TokenVerifierTest::files_ = nullptr;

TEST_F(TokenVerifierTest, TakesEachAlgorithmWithItsKey) {
  EXPECT_EQ(Outcome(Hs(), "hs256_ok"), "ok");
  EXPECT_EQ(Outcome(Rsa(), "rs256_ok"), "ok");
  EXPECT_EQ(Outcome(Ec(), "es256_ok"), "ok");
  EXPECT_EQ(Outcome(Jwks(), "jwks_rsa_ok"), "ok");
  EXPECT_EQ(Outcome(Jwks(), "jwks_ec_ok"), "ok");
  EXPECT_EQ(Outcome(Hs(), "audience_list"), "ok");
}

TEST_F(TokenVerifierTest, YieldsTheSubjectAndTheGrant) {
  auto v = Hs();
  ASSERT_NE(v, nullptr);
  Result<VerifiedToken> r = v->Verify(files_->Token("hs256_ok"), files_->now());
  ASSERT_OK(r);
  EXPECT_EQ(r->subject, "alice");
  EXPECT_EQ(r->read, (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(r->write, (std::vector<std::string>{"t2"}));
  EXPECT_EQ(r->groups, (std::vector<std::string>{"team"}));
  EXPECT_EQ(r->ends_at_s, files_->now() + 3600 + 30);

  Result<VerifiedToken> none = v->Verify(files_->Token("no_claim"), files_->now());
  ASSERT_OK(none);
  EXPECT_TRUE(none->read.empty() && none->write.empty() && none->groups.empty());

  Result<VerifiedToken> all = v->Verify(files_->Token("claim_everything"), files_->now());
  ASSERT_OK(all);
  EXPECT_EQ(all->read, (std::vector<std::string>{"*"}));
}

TEST_F(TokenVerifierTest, TheClaimNameIsASetting) {
  TokenSettings s = Settings("hs256.key", "", "");
  s.claim = "app";
  auto v = Load(s);
  ASSERT_NE(v, nullptr);
  Result<VerifiedToken> r = v->Verify(files_->Token("other_claim"), files_->now());
  ASSERT_OK(r);
  EXPECT_EQ(r->read, (std::vector<std::string>{"t1"}));
  Result<VerifiedToken> skiff_claim = v->Verify(files_->Token("hs256_ok"), files_->now());
  ASSERT_OK(skiff_claim);
  EXPECT_TRUE(skiff_claim->read.empty()) << "the default claim is not read when another is named";
}

TEST_F(TokenVerifierTest, RefusesAlgorithmsTheKeyDoesNotAllow) {
  EXPECT_EQ(Outcome(Hs(), "alg_none"), "token algorithm 'none' is refused");
  EXPECT_EQ(Outcome(Rsa(), "alg_none_upper"), "token algorithm 'none' is refused");
  EXPECT_EQ(Outcome(Hs(), "alg_hs512"), "token algorithm is not allowed for the configured key");
  // Algorithm confusion: an HMAC keyed with the public key's text.
  EXPECT_EQ(Outcome(Rsa(), "confusion_hs256_with_pem"),
            "token algorithm is not allowed for the configured key");
  EXPECT_EQ(Outcome(Hs(), "rs256_ok"), "token algorithm is not allowed for the configured key");
  EXPECT_EQ(Outcome(Hs(), "es256_ok"), "token algorithm is not allowed for the configured key");
  EXPECT_EQ(Outcome(Rsa(), "es256_ok"), "token algorithm is not allowed for the configured key");
  EXPECT_EQ(Outcome(Ec(), "rs256_ok"), "token algorithm is not allowed for the configured key");
  EXPECT_EQ(Outcome(Jwks(), "jwks_kid_wrong_type"),
            "token algorithm is not allowed for the configured key");
}

TEST_F(TokenVerifierTest, RefusesUnknownKids) {
  EXPECT_EQ(Outcome(Jwks(), "jwks_unknown_kid"), "token key id (kid) is unknown");
  EXPECT_EQ(Outcome(Jwks(), "jwks_no_kid"), "token key id (kid) is unknown");
  // With a PEM key beside the JWKS, a token without kid is the PEM key's.
  EXPECT_EQ(Outcome(Load(Settings("", "rsa_public.pem", "jwks.json")), "jwks_no_kid"), "ok");
}

TEST_F(TokenVerifierTest, RefusesWrongSignatures) {
  EXPECT_EQ(Outcome(Hs(), "bad_signature_hs256"), "token signature is wrong");
  EXPECT_EQ(Outcome(Rsa(), "bad_signature_rs256"), "token signature is wrong");
  EXPECT_EQ(Outcome(Ec(), "bad_signature_es256"), "token signature is wrong");
  EXPECT_EQ(Outcome(Load(Settings("", "other_rsa_public.pem", "")), "rs256_ok"),
            "token signature is wrong");
}

TEST_F(TokenVerifierTest, ChecksTheDates) {
  EXPECT_EQ(Outcome(Hs(), "expired"), "token expired");
  EXPECT_EQ(Outcome(Hs(), "not_yet_valid"), "token not yet valid");
  EXPECT_EQ(Outcome(Hs(), "issued_in_future"), "token not yet valid");
  EXPECT_EQ(Outcome(Hs(), "no_exp"), "malformed token: 'exp' is required");
  EXPECT_EQ(Outcome(Hs(), "exp_text"), "malformed token: 'exp' is not a number");
  // exp is now + 3600, the leeway 30 s: the last second it holds, then not.
  const int64_t end = files_->now() + 3600 + 30;
  EXPECT_EQ(Outcome(Hs(), "hs256_ok", end - 1), "ok");
  EXPECT_EQ(Outcome(Hs(), "hs256_ok", end), "token expired");
  TokenSettings strict = Settings("hs256.key", "", "");
  strict.leeway_s = 0;
  EXPECT_EQ(Outcome(Load(strict), "hs256_ok", end - 30), "token expired");
}

TEST_F(TokenVerifierTest, ChecksAudienceAndIssuerWhenSet) {
  EXPECT_EQ(Outcome(Hs(), "wrong_audience"), "token audience is wrong");
  EXPECT_EQ(Outcome(Hs(), "wrong_issuer"), "token issuer is wrong");
  TokenSettings open = Settings("hs256.key", "", "");
  open.audience.clear();
  open.issuer.clear();
  EXPECT_EQ(Outcome(Load(open), "wrong_audience"), "ok");
  EXPECT_EQ(Outcome(Load(open), "wrong_issuer"), "ok");
}

TEST_F(TokenVerifierTest, RefusesMalformedTokens) {
  const std::string malformed = "malformed token: ";
  for (const char* name : {"malformed_base64_padding", "malformed_base64_alphabet",
                           "malformed_two_parts", "malformed_four_parts", "malformed_header_json",
                           "malformed_payload_json", "payload_not_object", "claim_not_object",
                           "claim_bad_table", "claim_star_group", "crit_header"}) {
    EXPECT_EQ(Outcome(Hs(), name).rfind(malformed, 0), 0u) << name << ": " << Outcome(Hs(), name);
  }
  for (const char* text : {"", ".", "..", "a.b.c", "e30.e30.", "\xff.e30.e30"}) {
    Result<VerifiedToken> r = Hs()->Verify(text, files_->now());
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthorized);
  }
}

TEST_F(TokenVerifierTest, RefusesOversizedTokensBeforeDecoding) {
  EXPECT_EQ(Outcome(Hs(), "oversized"), "token is over the limit of 8192 bytes");
  // Not even its structure is looked at.
  Result<VerifiedToken> r = Hs()->Verify(std::string(8193, '!'), files_->now());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "token is over the limit of 8192 bytes");
  TokenSettings big = Settings("hs256.key", "", "");
  big.max_bytes = 64 * 1024;
  EXPECT_EQ(Outcome(Load(big), "oversized"), "ok");
}

TEST_F(TokenVerifierTest, RefusesSubjectsThatAreNoUserName) {
  const std::string refused = "token subject (sub) is missing or not a valid user name";
  EXPECT_EQ(Outcome(Hs(), "sub_dollar"), refused);
  EXPECT_EQ(Outcome(Hs(), "sub_missing"), refused);
}

TEST_F(TokenVerifierTest, KeyFilesAreCheckedAtLoad) {
  TokenSettings none;
  EXPECT_EQ(LoadTokenVerifier(none).status().code(), StatusCode::kBadRequest);

  TokenSettings missing;
  missing.hs256_key_file = files_->Path("no-such.key");
  Result<std::shared_ptr<const TokenVerifier>> r = LoadTokenVerifier(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("--token-hs256-key"), std::string::npos);
  EXPECT_NE(r.status().message().find("no-such.key"), std::string::npos);

  // A key file of the wrong kind, or a key we do not take, names the file.
  for (auto [pem, file] : {std::pair{true, "jwks.json"}, std::pair{false, "rsa_public.pem"},
                           std::pair{false, "bad.jwks.json"}}) {
    TokenSettings s;
    (pem ? s.public_key_file : s.jwks_file) = files_->Path(file);
    Result<std::shared_ptr<const TokenVerifier>> bad = LoadTokenVerifier(s);
    ASSERT_FALSE(bad.ok()) << file;
    EXPECT_EQ(bad.status().code(), StatusCode::kBadRequest) << file;
    EXPECT_NE(bad.status().message().find(file), std::string::npos) << bad.status().message();
  }
  KeySet keys;
  EXPECT_EQ(keys.SetHmacKey("short").code(), StatusCode::kBadRequest);
  EXPECT_EQ(keys.SetHmacKey("").code(), StatusCode::kBadRequest);
  EXPECT_EQ(keys.AddJwks(R"({"keys":[]})").code(), StatusCode::kBadRequest);
  EXPECT_EQ(keys.AddJwks(R"({"keys":[{"kty":"oct","kid":"a","k":"AAAA"}]})").code(),
            StatusCode::kBadRequest);
  EXPECT_TRUE(keys.empty());
}

TEST(Base64UrlTest, DecodesOnlyStrictUnpaddedUrlAlphabet) {
  EXPECT_EQ(DecodeBase64Url(""), std::string());
  EXPECT_EQ(DecodeBase64Url("Zg"), std::string("f"));
  EXPECT_EQ(DecodeBase64Url("Zm8"), std::string("fo"));
  EXPECT_EQ(DecodeBase64Url("Zm9v"), std::string("foo"));
  EXPECT_EQ(DecodeBase64Url("-_8"), std::string("\xfb\xff"));
  for (const char* bad : {"Zg==", "Zm8=", "+/8", "Zm9v ", "Z", "Zh", "Zm9", "Zm\n9v"}) {
    EXPECT_FALSE(DecodeBase64Url(bad).has_value()) << bad;
  }
  for (const std::string& bytes : {std::string(), std::string("\0\x01\xfe\xff", 4),
                                   std::string("hello world"), std::string(100, '\x7f')}) {
    EXPECT_EQ(DecodeBase64Url(EncodeBase64Url(bytes)), bytes);
  }
}

}  // namespace
}  // namespace skiff::server::auth
