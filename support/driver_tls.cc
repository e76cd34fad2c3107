#include "support/driver_tls.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <asio/ip/address.hpp>
#include <openssl/err.h>
#include <openssl/x509v3.h>

namespace skiff::bench {
namespace {

// The first queued OpenSSL error as text, the queue cleared.
std::string OpenSslError(const char* what) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return what;
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return std::string(what) + ": " + text;
}

}  // namespace

Result<std::unique_ptr<asio::ssl::context>> NewClientContext(const std::string& ca_file,
                                                             bool insecure) {
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  asio::error_code ec;
  if (insecure) {
    context->set_verify_mode(asio::ssl::verify_none, ec);
    return context;
  }
  context->set_verify_mode(asio::ssl::verify_peer, ec);
  if (ec) return Internal("TLS verify mode: " + ec.message());
  if (ca_file.empty()) {
    context->set_default_verify_paths(ec);
    if (ec) return Unavailable("the system's trusted roots: " + ec.message());
  } else {
    context->load_verify_file(ca_file, ec);
    if (ec) return BadRequest("cannot read the CA file '" + ca_file + "': " + ec.message());
  }
  return context;
}

bool ExpectServerName(SSL* ssl, const std::string& host) {
  asio::error_code not_ip;
  (void)asio::ip::make_address(host, not_ip);
  if (!not_ip) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
  // SNI carries names only (RFC 6066 section 3), never an address.
  return SSL_set1_host(ssl, host.c_str()) == 1 &&
         SSL_set_tlsext_host_name(ssl, const_cast<char*>(host.c_str())) == 1;
}

std::string HandshakeFailure(SSL* ssl, const std::string& fallback) {
  const long verdict = SSL_get_verify_result(ssl);
  if (verdict == X509_V_OK) return fallback;
  return std::string("certificate rejected: ") + X509_verify_cert_error_string(verdict);
}

Result<std::unique_ptr<SslFdStream>> SslFdStream::Connect(asio::ssl::context& context, int fd,
                                                          const std::string& host) {
  SSL* ssl = SSL_new(context.native_handle());
  if (ssl == nullptr) return Internal(OpenSslError("SSL_new"));
  std::unique_ptr<SslFdStream> stream(new SslFdStream(ssl));
  // The descriptor is this stream's alone, so OpenSSL may read ahead: a
  // reply then costs one read() instead of one for the record header and
  // one for its body.
  SSL_set_read_ahead(ssl, 1);
  if (SSL_set_fd(ssl, fd) != 1 || !ExpectServerName(ssl, host)) {
    return Internal(OpenSslError("TLS setup"));
  }
  ERR_clear_error();
  if (SSL_connect(ssl) != 1) {
    return Unavailable("TLS handshake with " + host + ": " +
                       HandshakeFailure(ssl, OpenSslError("failed")));
  }
  return stream;
}

SslFdStream::~SslFdStream() { SSL_free(ssl_); }

ptrdiff_t SslFdStream::Read(char* data, size_t size) {
  ERR_clear_error();
  const int n = SSL_read(ssl_, data, int(std::min<size_t>(size, INT32_MAX)));
  if (n > 0) return n;
  const int saved_errno = errno;
  switch (SSL_get_error(ssl_, n)) {
    case SSL_ERROR_WANT_READ:  // the receive timeout (or a signal)
      return kTimedOut;
    case SSL_ERROR_ZERO_RETURN:  // close_notify
      return kClosed;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0 && (n == 0 || saved_errno == 0)) return kClosed;  // bare EOF
      error_ = saved_errno != 0 ? std::strerror(saved_errno) : OpenSslError("read");
      return kFailed;
    default:
      error_ = OpenSslError("read");
      return kFailed;
  }
}

bool SslFdStream::Write(std::string_view data) {
  while (!data.empty()) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, data.data(), int(std::min<size_t>(data.size(), INT32_MAX)));
    if (n > 0) {
      data.remove_prefix(size_t(n));
      continue;
    }
    const int saved_errno = errno;
    const int why = SSL_get_error(ssl_, n);
    if (why == SSL_ERROR_WANT_WRITE && saved_errno == EINTR) continue;
    error_ = why == SSL_ERROR_SYSCALL && saved_errno != 0 ? std::strerror(saved_errno)
                                                          : OpenSslError("write");
    return false;
  }
  return true;
}

}  // namespace skiff::bench
