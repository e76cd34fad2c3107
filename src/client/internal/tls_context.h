// The client's TLS settings on an OpenSSL context, and the words for a TLS
// handshake that failed. No I/O; transport.cc uses it for wss://.
//
// Thread-compatible: a context is configured once, on the transport's I/O
// thread, before the one connection it serves uses it.
#ifndef SKIFF_CLIENT_INTERNAL_TLS_CONTEXT_H_
#define SKIFF_CLIENT_INTERNAL_TLS_CONTEXT_H_

#include <string>

#include <openssl/ssl.h>

#include "base/status.h"
#include "client/internal/transport.h"

namespace skiff::client::internal {

// Readies `ctx`, a fresh client context for one connection to `host`: TLS
// 1.2 at least, OpenSSL's default ciphers, and unless `tls.insecure` the
// server's chain checked against `tls.ca_file` (empty: the system's store)
// and its certificate against `host` (its IP address SAN when `host` is an
// IP literal). bad_request naming the file when the CA file cannot be
// loaded; internal when OpenSSL refuses a setting.
Status ConfigureClientTls(SSL_CTX* ctx, const std::string& host, const TransportTls& tls);

// Why the handshake on `ssl` (made from a context ConfigureClientTls set up)
// failed, as OpenSSL saw it: "certificate verify failed: hostname mismatch",
// "the server refused the TLS handshake: protocol version"; empty when
// OpenSSL saw nothing wrong (the failure was the socket's).
std::string TlsFailureReason(const SSL* ssl);

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_TLS_CONTEXT_H_
