// Client-side TLS of the load driver (support/load_driver.h), through
// OpenSSL with its default protocol versions and ciphers: the context the
// connections of one driver share (what they trust, whether they check),
// the per-connection identity check, and SslFdStream, a TLS stream over a
// blocking descriptor for the driver's sequential mode, where an event
// loop's turn per request would cost more than the request.
//
// Thread-compatible: a context is set up once, then only read; a stream
// belongs to one thread.
#ifndef SKIFF_SUPPORT_DRIVER_TLS_H_
#define SKIFF_SUPPORT_DRIVER_TLS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <asio/buffer.hpp>
#include <asio/error.hpp>
#include <asio/ssl/context.hpp>
#include <openssl/ssl.h>

#include "base/status.h"

namespace skiff::bench {

// A TLS client context. The server's chain must lead to a root in the PEM
// file `ca_file` (empty: the system store), unless `insecure`, which
// accepts any certificate. bad_request when `ca_file` cannot be read.
Result<std::unique_ptr<asio::ssl::context>> NewClientContext(const std::string& ca_file,
                                                             bool insecure);

// Makes `ssl` check that the server's certificate names `host` (a DNS name,
// which is also sent as SNI, or an IP address). False when OpenSSL refuses.
bool ExpectServerName(SSL* ssl, const std::string& host);

// Why a handshake on `ssl` failed: the certificate verdict when the chain
// or the name did not pass, else `fallback`.
std::string HandshakeFailure(SSL* ssl, const std::string& fallback);

// TLS over a connected descriptor that stays blocking; a receive timeout
// on the descriptor (SO_RCVTIMEO) bounds each read. Owns its SSL, not the
// descriptor.
class SslFdStream {
 public:
  enum : ptrdiff_t { kClosed = 0, kTimedOut = -1, kFailed = -2 };

  // The client handshake on `fd` with the identity check of `host` (unless
  // the context accepts anything); unavailable with the reason on failure.
  static Result<std::unique_ptr<SslFdStream>> Connect(asio::ssl::context& context, int fd,
                                                      const std::string& host);
  ~SslFdStream();
  SslFdStream(const SslFdStream&) = delete;
  SslFdStream& operator=(const SslFdStream&) = delete;

  // Bytes read (> 0), kClosed when the server closed, kTimedOut when the
  // receive timeout passed without a whole record, kFailed otherwise
  // (error() says why).
  ptrdiff_t Read(char* data, size_t size);
  // Sends all of `data`; false on failure (error() says why).
  bool Write(std::string_view data);
  const std::string& error() const { return error_; }

  // Asio's SyncReadStream and SyncWriteStream, for the WebSocket upgrade.
  template <typename MutableBuffers>
  size_t read_some(const MutableBuffers& buffers, asio::error_code& ec) {
    const asio::mutable_buffer b = *asio::buffer_sequence_begin(buffers);
    const ptrdiff_t n = Read(static_cast<char*>(b.data()), b.size());
    if (n > 0) return size_t(n);
    ec = n == kClosed ? asio::error_code(asio::error::eof)
                      : asio::error_code(asio::error::connection_aborted);
    return 0;
  }
  template <typename ConstBuffers>
  size_t write_some(const ConstBuffers& buffers, asio::error_code& ec) {
    const asio::const_buffer b = *asio::buffer_sequence_begin(buffers);
    if (Write({static_cast<const char*>(b.data()), b.size()})) return b.size();
    ec = asio::error::connection_aborted;
    return 0;
  }

 private:
  explicit SslFdStream(SSL* ssl) : ssl_(ssl) {}
  SSL* const ssl_;
  std::string error_;
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_DRIVER_TLS_H_
