// TlsContext: the server's certificate and key as an OpenSSL SSL_CTX, for
// the listener's wss:// port. TLS 1.2 and 1.3 only, no renegotiation.
//
// Load checks everything a start must refuse on and says which file is at
// fault: missing or unreadable, no PEM certificate or key in it, a key that
// does not match the certificate, a certificate expired or not yet valid.
// Reload (SIGHUP) makes a new SSL_CTX from the same files the same way and
// swaps it in only if it passes; sessions already open keep the one they
// began with (each SSL holds a reference to its context).
//
// Thread-safe.
#ifndef SKIFF_SERVER_TLS_CONTEXT_H_
#define SKIFF_SERVER_TLS_CONTEXT_H_

#include <memory>
#include <string>

#include "base/mutex.h"
#include "base/status.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace skiff::server {

struct TlsSettings {
  std::string cert_file;  // PEM: the leaf first, then any intermediates
  std::string key_file;   // PEM: the leaf's private key
  // OpenSSL frees a connection's 16-17 KiB record buffers while it has
  // nothing buffered (SSL_MODE_RELEASE_BUFFERS), which is what keeps an
  // idle TLS connection small. Off only to measure what it saves.
  bool release_buffers = true;
};

class TlsContext {
 public:
  // bad_request naming the file and the fault when the pair cannot serve.
  static Result<std::unique_ptr<TlsContext>> Load(const TlsSettings& settings);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Re-reads both files; on a fault keeps the current pair and says why.
  Status Reload();
  // A server-side session on `fd` with the current pair; null when OpenSSL
  // cannot make one (out of memory). The caller frees it with SSL_free.
  SSL* NewSession(int fd) const;
  // "CN=..., expires 2027-01-01 00:00:00 UTC" of the pair in use.
  std::string Describe() const;

 private:
  TlsContext(TlsSettings settings, SSL_CTX* ctx, std::string description);

  const TlsSettings settings_;
  mutable Mutex mu_;
  SSL_CTX* ctx_ SKIFF_GUARDED_BY(mu_);
  std::string description_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace skiff::server

#endif  // SKIFF_SERVER_TLS_CONTEXT_H_
