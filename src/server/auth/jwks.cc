#include "server/auth/jwks.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include "server/auth/base64url.h"

namespace skiff::server::auth {
namespace {

using nlohmann::json;

std::shared_ptr<evp_pkey_st> Own(EVP_PKEY* key) {
  return std::shared_ptr<evp_pkey_st>(key, EVP_PKEY_free);
}

// The algorithm a key's type implies: RS256 for RSA of at least
// kMinRsaBits, ES256 for P-256; bad_request for anything else.
Result<Algorithm> AlgorithmOf(EVP_PKEY* key) {
  if (EVP_PKEY_is_a(key, "RSA")) {
    if (EVP_PKEY_get_bits(key) < KeySet::kMinRsaBits) {
      return BadRequest("RSA key of " + std::to_string(EVP_PKEY_get_bits(key)) +
                        " bits; at least " + std::to_string(KeySet::kMinRsaBits) + " are needed");
    }
    return Algorithm::kRs256;
  }
  if (EVP_PKEY_is_a(key, "EC")) {
    char group[64] = {};
    size_t length = 0;
    if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                       &length) != 1 ||
        std::string_view(group, length) != "prime256v1") {
      return BadRequest("EC key not on P-256 (ES256 needs the P-256 curve)");
    }
    return Algorithm::kEs256;
  }
  return BadRequest("key type is neither RSA nor EC");
}

// A decoded JWK member that must be present and base64url.
Result<std::string> Member(const json& jwk, const char* name) {
  auto it = jwk.find(name);
  if (it == jwk.end() || !it->is_string()) return BadRequest(std::string("no '") + name + "'");
  std::optional<std::string> bytes = DecodeBase64Url(it->get_ref<const std::string&>());
  if (!bytes || bytes->empty()) return BadRequest(std::string("'") + name + "' is not base64url");
  return *std::move(bytes);
}

// Builds a public key from parameters (RSA n and e, or an EC point) and
// checks it as OpenSSL would check a received key.
Result<std::shared_ptr<evp_pkey_st>> FromParams(const char* type, OSSL_PARAM_BLD* build) {
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(build);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* key = nullptr;
  const bool made = params != nullptr && ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1 &&
                    EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) == 1;
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  if (!made) return BadRequest("OpenSSL does not take it as a public key");
  std::shared_ptr<evp_pkey_st> owned = Own(key);
  EVP_PKEY_CTX* check = EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr);
  const bool valid = check != nullptr && EVP_PKEY_public_check(check) == 1;
  EVP_PKEY_CTX_free(check);
  if (!valid) return BadRequest("the public key fails OpenSSL's check");
  return owned;
}

Result<std::shared_ptr<evp_pkey_st>> RsaFromJwk(const json& jwk) {
  SKIFF_ASSIGN_OR_RETURN(std::string n, Member(jwk, "n"));
  SKIFF_ASSIGN_OR_RETURN(std::string e, Member(jwk, "e"));
  BIGNUM* bn_n = BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()),
                           static_cast<int>(n.size()), nullptr);
  BIGNUM* bn_e = BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()),
                           static_cast<int>(e.size()), nullptr);
  OSSL_PARAM_BLD* build = OSSL_PARAM_BLD_new();
  Result<std::shared_ptr<evp_pkey_st>> key = BadRequest("out of memory");
  if (bn_n != nullptr && bn_e != nullptr && build != nullptr &&
      OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
      OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1) {
    key = FromParams("RSA", build);
  }
  OSSL_PARAM_BLD_free(build);
  BN_free(bn_n);
  BN_free(bn_e);
  return key;
}

Result<std::shared_ptr<evp_pkey_st>> EcFromJwk(const json& jwk) {
  auto crv = jwk.find("crv");
  if (crv == jwk.end() || *crv != "P-256") return BadRequest("'crv' is not P-256");
  SKIFF_ASSIGN_OR_RETURN(std::string x, Member(jwk, "x"));
  SKIFF_ASSIGN_OR_RETURN(std::string y, Member(jwk, "y"));
  if (x.size() != 32 || y.size() != 32) return BadRequest("'x' and 'y' must be 32 bytes each");
  // The uncompressed point: 0x04, x, y (SEC 1 section 2.3.3).
  std::string point = "\x04" + x + y;
  OSSL_PARAM_BLD* build = OSSL_PARAM_BLD_new();
  Result<std::shared_ptr<evp_pkey_st>> key = BadRequest("out of memory");
  if (build != nullptr &&
      OSSL_PARAM_BLD_push_utf8_string(build, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
      OSSL_PARAM_BLD_push_octet_string(build, OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) == 1) {
    key = FromParams("EC", build);
  }
  OSSL_PARAM_BLD_free(build);
  return key;
}

// One JWKS entry: a signing key with a kid, of a type and algorithm we take.
Result<PublicKey> KeyFromJwk(const json& jwk) {
  if (!jwk.is_object()) return BadRequest("not an object");
  auto kid = jwk.find("kid");
  if (kid == jwk.end() || !kid->is_string() || kid->get_ref<const std::string&>().empty()) {
    return BadRequest("no 'kid' (keys are chosen by it)");
  }
  auto use = jwk.find("use");
  if (use != jwk.end() && *use != "sig") return BadRequest("'use' is not \"sig\"");
  auto kty = jwk.find("kty");
  if (kty == jwk.end() || !kty->is_string()) return BadRequest("no 'kty'");
  PublicKey key;
  key.kid = kid->get<std::string>();
  if (*kty == "RSA") {
    SKIFF_ASSIGN_OR_RETURN(key.key, RsaFromJwk(jwk));
  } else if (*kty == "EC") {
    SKIFF_ASSIGN_OR_RETURN(key.key, EcFromJwk(jwk));
  } else {
    return BadRequest("'kty' is neither \"RSA\" nor \"EC\"");
  }
  SKIFF_ASSIGN_OR_RETURN(key.algorithm, AlgorithmOf(key.key.get()));
  // A key that names its algorithm must name the one its type implies.
  auto alg = jwk.find("alg");
  const char* implied = key.algorithm == Algorithm::kRs256 ? "RS256" : "ES256";
  if (alg != jwk.end() && *alg != implied) {
    return BadRequest(std::string("'alg' does not match the key's type (") + implied + ")");
  }
  return key;
}

}  // namespace

Status KeySet::SetHmacKey(std::string secret) {
  if (secret.size() < kMinHmacKeyBytes) {
    return BadRequest("HS256 key of " + std::to_string(secret.size()) + " bytes; at least " +
                      std::to_string(kMinHmacKeyBytes) + " are needed");
  }
  hmac_key_ = std::move(secret);
  return Status::Ok();
}

Status KeySet::SetPemKey(std::string_view pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* raw = bio != nullptr ? PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (raw == nullptr) return BadRequest("not a PEM public key (-----BEGIN PUBLIC KEY-----)");
  auto key = std::make_shared<PublicKey>();
  key->key = Own(raw);
  SKIFF_ASSIGN_OR_RETURN(key->algorithm, AlgorithmOf(raw));
  pem_key_ = std::move(key);
  return Status::Ok();
}

Status KeySet::AddJwks(std::string_view text) {
  const json set = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!set.is_object() || !set.contains("keys") || !set["keys"].is_array() || set["keys"].empty()) {
    return BadRequest("not a JWKS: expected {\"keys\": [...]} with at least one key");
  }
  std::vector<PublicKey> keys;
  for (size_t i = 0; i < set["keys"].size(); ++i) {
    Result<PublicKey> key = KeyFromJwk(set["keys"][i]);
    if (!key.ok()) {
      return BadRequest("key " + std::to_string(i) + ": " + key.status().message());
    }
    for (const PublicKey& other : keys) {
      if (other.kid == key->kid) return BadRequest("key " + std::to_string(i) + ": kid repeated");
    }
    keys.push_back(*std::move(key));
  }
  jwks_ = std::move(keys);
  return Status::Ok();
}

const PublicKey* KeySet::FindKid(std::string_view kid) const {
  for (const PublicKey& key : jwks_) {
    if (key.kid == kid) return &key;
  }
  return nullptr;
}

Result<std::string> ReadKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unavailable("cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Unavailable("cannot read '" + path + "': " + std::strerror(errno));
  return text.str();
}

}  // namespace skiff::server::auth
