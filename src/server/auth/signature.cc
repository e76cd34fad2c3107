#include "server/auth/signature.h"

#include <string>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace skiff::server::auth {
namespace {

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

constexpr size_t kEs256Half = 32;  // R and S of P-256, each

// The DER ECDSA-Sig-Value of a JWS ES256 signature (R||S); empty when it is
// not 64 bytes or cannot be converted.
std::string EcdsaDer(std::string_view raw) {
  if (raw.size() != 2 * kEs256Half) return {};
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(Bytes(raw), kEs256Half, nullptr);
  BIGNUM* s = BN_bin2bn(Bytes(raw) + kEs256Half, kEs256Half, nullptr);
  std::string der;
  if (sig != nullptr && r != nullptr && s != nullptr && ECDSA_SIG_set0(sig, r, s) == 1) {
    r = s = nullptr;  // owned by sig now
    unsigned char* out = nullptr;
    const int length = i2d_ECDSA_SIG(sig, &out);
    if (length > 0) der.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(length));
    OPENSSL_free(out);
  }
  BN_free(r);
  BN_free(s);
  ECDSA_SIG_free(sig);
  return der;
}

bool DigestVerify(evp_pkey_st* key, std::string_view input, std::string_view signature) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok =
      ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestVerify(ctx, Bytes(signature), signature.size(), Bytes(input), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

}  // namespace

bool VerifyHs256(std::string_view key, std::string_view input, std::string_view signature) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (key.empty() || HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), Bytes(input),
                          input.size(), mac, &length) == nullptr) {
    return false;
  }
  return signature.size() == length && CRYPTO_memcmp(mac, signature.data(), length) == 0;
}

bool VerifyPublic(const PublicKey& key, std::string_view input, std::string_view signature) {
  if (key.key == nullptr) return false;
  switch (key.algorithm) {
    case Algorithm::kRs256:
      return DigestVerify(key.key.get(), input, signature);
    case Algorithm::kEs256: {
      const std::string der = EcdsaDer(signature);
      return !der.empty() && DigestVerify(key.key.get(), input, der);
    }
    case Algorithm::kHs256:
      return false;
  }
  return false;
}

}  // namespace skiff::server::auth
