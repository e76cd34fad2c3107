// KeySet: the keys a token may be signed with, read once at start.
//
// At most one HMAC key (HS256, the bytes of a shared key file), at most one
// PEM public key (RS256 for an RSA key, ES256 for a P-256 key; used for
// tokens without a `kid`, or with any `kid` when no JWKS is configured), and
// the keys of a JWKS file, each chosen by its `kid`. Each key allows exactly
// one algorithm, the one its type implies, so a token can never pick how
// its own key is used (algorithm confusion).
// Immutable once built; thread-safe for reading.
#ifndef SKIFF_SERVER_AUTH_JWKS_H_
#define SKIFF_SERVER_AUTH_JWKS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY, kept out of this header

namespace skiff::server::auth {

// The algorithms a token may name (JWS "alg"); any other is refused.
enum class Algorithm { kHs256, kRs256, kEs256 };

// A public key and the one algorithm it verifies.
struct PublicKey {
  std::string kid;  // empty for the PEM key
  Algorithm algorithm = Algorithm::kRs256;
  std::shared_ptr<evp_pkey_st> key;
};

class KeySet {
 public:
  // Shorter HMAC keys are refused: RFC 7518 section 3.2 asks for at least
  // the hash's size.
  static constexpr size_t kMinHmacKeyBytes = 32;
  // Smaller RSA keys are refused (RFC 7518 section 3.3).
  static constexpr int kMinRsaBits = 2048;

  // Each setter: bad_request saying why the key is refused (too short, not
  // a public key, a type or curve we do not take, a JWKS key without kid).
  Status SetHmacKey(std::string secret);
  Status SetPemKey(std::string_view pem);
  Status AddJwks(std::string_view json);

  bool empty() const { return hmac_key_.empty() && !pem_key_ && jwks_.empty(); }
  const std::string& hmac_key() const { return hmac_key_; }  // empty = none
  const PublicKey* pem_key() const { return pem_key_.get(); }
  bool has_jwks() const { return !jwks_.empty(); }
  // The JWKS key named `kid`; nullptr when the set has none.
  const PublicKey* FindKid(std::string_view kid) const;

 private:
  std::string hmac_key_;
  std::shared_ptr<const PublicKey> pem_key_;
  std::vector<PublicKey> jwks_;
};

// Reads a whole key file. unavailable naming the file and the reason
// (errno's text) when it cannot be read.
Result<std::string> ReadKeyFile(const std::string& path);

}  // namespace skiff::server::auth

#endif  // SKIFF_SERVER_AUTH_JWKS_H_
