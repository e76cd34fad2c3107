// Test certificates: a root CA, an intermediate CA and server certificates
// made with OpenSSL at run time (EC P-256, valid for a day), written as PEM
// files into a directory, so TLS tests and benches need no files in the
// tree and no clock-dependent fixtures.
//
//   ca          the root, what a client trusts (--tls-ca)
//   cert        the server's chain: the leaf (localhost, 127.0.0.1, ::1)
//               followed by the intermediate that signed it
//   key         the leaf's private key
//   other_key   a key that matches no certificate here
//   expired     the leaf's key in a certificate that expired an hour ago
//   wrong_host  a chain for example.invalid only (hostname checks)
//   other_ca    a root that signed none of these (trust checks)
#ifndef SKIFF_SUPPORT_TEST_CERTS_H_
#define SKIFF_SUPPORT_TEST_CERTS_H_

#include <string>

namespace skiff::support {

struct TestCertFiles {
  std::string ca;
  std::string cert;
  std::string key;
  std::string other_key;
  std::string expired;
  std::string wrong_host;
  std::string other_ca;
};

// Makes a fresh set into `dir` (which must exist). Aborts with a message on
// an OpenSSL failure: a test cannot go on without them.
TestCertFiles WriteTestCertificates(const std::string& dir);

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_TEST_CERTS_H_
