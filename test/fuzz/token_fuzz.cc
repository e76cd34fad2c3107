// Fuzz target for the token verifier (server/auth), which reads the token
// of every login before anything else has checked it. Beyond "never
// crashes": every refusal is unauthorized with a message of plain text that
// does not quote the token, and a token taken names a subject that can be
// a user.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "base/status.h"
#include "server/auth/token_verifier.h"

namespace {

using skiff::server::auth::KeySet;
using skiff::server::auth::TokenSettings;
using skiff::server::auth::TokenVerifier;

// The seeds in corpus/token/ are HS256 tokens under this key (a test
// fixture, no secret), valid at kNow, so mutations reach the claims.
constexpr std::string_view kHmacKey = "skiff-fuzz-hmac-key-0123456789abcdef";
constexpr int64_t kNow = 1700000000;
// A P-256 public key, so ES256 and kid handling are reached too.
constexpr std::string_view kJwks =
    R"({"keys":[{"kty":"EC","crv":"P-256","kid":"ec-1","alg":"ES256",)"
    R"("x":"HyjnPAMrTF7JPmXNw1tk5IaAk91Zi4uvse-fLA-jPYM",)"
    R"("y":"3cDLSWKuXed1w7Y696OS_jJ05wG6lJoSEWnSBYb4S2g"}]})";

const TokenVerifier& Verifier() {
  static const TokenVerifier* verifier = [] {
    KeySet keys;
    SKIFF_CHECK(keys.SetHmacKey(std::string(kHmacKey)).ok());
    SKIFF_CHECK(keys.AddJwks(kJwks).ok());
    TokenSettings settings;
    settings.audience = "skiff-fuzz";
    settings.max_bytes = 4096;
    return new TokenVerifier(std::move(keys), settings);
  }();
  return *verifier;
}

bool IsPrintableAscii(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7E) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view token(reinterpret_cast<const char*>(data), size);
  skiff::Result<skiff::server::auth::VerifiedToken> r = Verifier().Verify(token, kNow);
  if (!r.ok()) {
    SKIFF_CHECK(r.status().code() == skiff::StatusCode::kUnauthorized);
    SKIFF_CHECK(IsPrintableAscii(r.status().message()));
    SKIFF_CHECK(size < 16 || r.status().message().find(token) == std::string::npos);
    return 0;
  }
  SKIFF_CHECK(!r->subject.empty() && r->subject[0] != '$');
  SKIFF_CHECK(r->ends_at_s > kNow);
  return 0;
}
