// JWS signature checks with OpenSSL: HS256 (HMAC-SHA256 compared in
// constant time), RS256 (RSASSA-PKCS1-v1_5 with SHA-256) and ES256 (ECDSA
// P-256 with SHA-256, whose JWS form is R||S, 64 bytes, turned into the DER
// OpenSSL verifies). Each is true only for a valid signature of `input`
// (the token's "header.payload" text) under the key.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_AUTH_SIGNATURE_H_
#define SKIFF_SERVER_AUTH_SIGNATURE_H_

#include <string_view>

#include "server/auth/jwks.h"

namespace skiff::server::auth {

bool VerifyHs256(std::string_view key, std::string_view input, std::string_view signature);
// `key` must allow RS256 or ES256; the key's algorithm decides which.
bool VerifyPublic(const PublicKey& key, std::string_view input, std::string_view signature);

}  // namespace skiff::server::auth

#endif  // SKIFF_SERVER_AUTH_SIGNATURE_H_
