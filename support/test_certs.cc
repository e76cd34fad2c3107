#include "support/test_certs.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace skiff::support {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "test certificates: %s failed\n", what);
  ERR_print_errors_fp(stderr);
  std::abort();
}

void Check(bool ok, const char* what) {
  if (!ok) Fail(what);
}

Key NewKey() {
  Key key(EVP_EC_gen("P-256"));
  Check(key != nullptr, "EVP_EC_gen");
  return key;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "X509V3_EXT_conf_nid");
  Check(X509_add_ext(cert, ext, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(ext);
}

struct CertSpec {
  std::string common_name;
  bool is_ca = false;
  const char* alt_names = nullptr;  // subjectAltName value, leaves only
  long not_before_s = -3600;        // relative to now
  long not_after_s = 24 * 3600;
};

// Signs a certificate for `key` with `issuer_key` (issuer null: self-signed).
Cert Issue(const CertSpec& spec, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key) {
  static long serial = 1;
  Cert cert(X509_new());
  Check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), spec.not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), spec.not_after_s);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                             -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (spec.is_ca) {
    AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  } else {
    AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
    AddExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth");
    if (spec.alt_names != nullptr) {
      AddExtension(cert.get(), signer, NID_subject_alt_name, spec.alt_names);
    }
  }
  if (issuer != nullptr) {
    AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  }
  Check(X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0,
        "X509_sign");
  return cert;
}

void WritePem(const std::string& path, const std::vector<X509*>& certs, EVP_PKEY* key) {
  BIO* out = BIO_new_file(path.c_str(), "w");
  Check(out != nullptr, "BIO_new_file");
  for (X509* c : certs) Check(PEM_write_bio_X509(out, c) == 1, "PEM_write_bio_X509");
  if (key != nullptr) {
    Check(PEM_write_bio_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
          "PEM_write_bio_PrivateKey");
  }
  BIO_free(out);
}

}  // namespace

TestCertFiles WriteTestCertificates(const std::string& dir) {
  const char* kLocal = "DNS:localhost,IP:127.0.0.1,IP:::1";
  Key root_key = NewKey();
  Cert root = Issue({"Skiff Test Root", true}, root_key.get(), nullptr, nullptr);
  Key mid_key = NewKey();
  Cert mid = Issue({"Skiff Test Intermediate", true}, mid_key.get(), root.get(), root_key.get());
  Key leaf_key = NewKey();
  Cert leaf = Issue({"localhost", false, kLocal}, leaf_key.get(), mid.get(), mid_key.get());
  CertSpec expired_spec{"localhost", false, kLocal, -2 * 24 * 3600, -3600};
  Cert expired = Issue(expired_spec, leaf_key.get(), mid.get(), mid_key.get());
  Cert wrong_host = Issue({"example.invalid", false, "DNS:example.invalid"}, leaf_key.get(),
                          mid.get(), mid_key.get());
  Key other_root_key = NewKey();
  Cert other_root = Issue({"Skiff Other Root", true}, other_root_key.get(), nullptr, nullptr);
  Key other_key = NewKey();

  TestCertFiles files;
  files.ca = dir + "/ca.pem";
  files.cert = dir + "/cert.pem";
  files.key = dir + "/key.pem";
  files.other_key = dir + "/other_key.pem";
  files.expired = dir + "/expired.pem";
  files.wrong_host = dir + "/wrong_host.pem";
  files.other_ca = dir + "/other_ca.pem";
  WritePem(files.ca, {root.get()}, nullptr);
  WritePem(files.cert, {leaf.get(), mid.get()}, nullptr);
  WritePem(files.key, {}, leaf_key.get());
  WritePem(files.other_key, {}, other_key.get());
  WritePem(files.expired, {expired.get(), mid.get()}, nullptr);
  WritePem(files.wrong_host, {wrong_host.get(), mid.get()}, nullptr);
  WritePem(files.other_ca, {other_root.get()}, nullptr);
  return files;
}

}  // namespace skiff::support
