// TokenVerifier: checks a signed token (a JWS compact JWT) for `login` and
// yields who it names and what they may touch (docs/protocol.md, "Login
// with a token"; docs/deploy.md, "Token sign-in").
//
// Checks, in order: size (before any decoding), structure, the header's
// `alg` against the configured key (never `none`; an HMAC token only
// against the HMAC key, RS256/ES256 only against a public key of that
// type), the signature, then the claims: `exp` (required), `nbf`, `iat`,
// `aud` and `iss` when configured, `sub`, and the permissions claim. Every
// refusal is unauthorized with a fixed message that never quotes the token.
// Immutable once built; Verify is thread-safe.
#ifndef SKIFF_SERVER_AUTH_TOKEN_VERIFIER_H_
#define SKIFF_SERVER_AUTH_TOKEN_VERIFIER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/auth/jwks.h"

namespace skiff::server::auth {

// What skiffd's --token-* settings say. No key file = no token logins.
struct TokenSettings {
  std::string hs256_key_file;   // the file's bytes exactly are the key
  std::string public_key_file;  // PEM: RS256 (RSA) or ES256 (P-256)
  std::string jwks_file;        // JWKS: keys chosen by the token's kid
  std::string audience;         // empty = `aud` not checked
  std::string issuer;           // empty = `iss` not checked
  // Clock skew allowed to exp, nbf and iat, in seconds.
  size_t leeway_s = 30;
  // The claim holding {"read": [...], "write": [...], "groups": [...]}.
  std::string claim = "skiff";
  // A longer token is refused unread.
  size_t max_bytes = 8 * 1024;

  bool enabled() const {
    return !hs256_key_file.empty() || !public_key_file.empty() || !jwks_file.empty();
  }
};

// What a valid token grants.
struct VerifiedToken {
  std::string subject;  // `sub`: never empty, never starts with '$'
  // Table names or "*", each checked like a table name; empty without the
  // claim.
  std::vector<std::string> read;
  std::vector<std::string> write;
  std::vector<std::string> groups;  // sync groups, named like tables
  // Unix seconds from which the token no longer holds: `exp` plus the
  // leeway, the same bound a login checks.
  int64_t ends_at_s = 0;
};

class TokenVerifier {
 public:
  TokenVerifier(KeySet keys, TokenSettings settings)
      : keys_(std::move(keys)), settings_(std::move(settings)) {}

  // The grant of `token` at `now_s` (Unix seconds); unauthorized naming the
  // first check it fails.
  Result<VerifiedToken> Verify(std::string_view token, int64_t now_s) const;

  const TokenSettings& settings() const { return settings_; }

 private:
  // The signature check for the header's `alg` and `kid`.
  Status CheckSignature(std::string_view alg, const std::string* kid, std::string_view input,
                        std::string_view signature) const;

  const KeySet keys_;
  const TokenSettings settings_;
};

// Reads the key files `settings` names and builds the verifier. An error
// names the file and why (cannot be read, not a key, key refused); bad_request
// when no key file is named or a setting is out of range.
Result<std::shared_ptr<const TokenVerifier>> LoadTokenVerifier(const TokenSettings& settings);

}  // namespace skiff::server::auth

#endif  // SKIFF_SERVER_AUTH_TOKEN_VERIFIER_H_
