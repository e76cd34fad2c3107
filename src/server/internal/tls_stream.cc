#include "server/internal/tls_stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace skiff::server::internal {

// Records whether each read OpenSSL makes from the socket emptied it.
long NoteSocketRead(void* bio, int oper, const char*, size_t len, int, long, int ret,
                    size_t* processed) {
  if (oper == (BIO_CB_READ | BIO_CB_RETURN)) {
    auto* stream = reinterpret_cast<TlsStream*>(BIO_get_callback_arg(static_cast<BIO*>(bio)));
    stream->socket_emptied_ = ret <= 0 || processed == nullptr || *processed < len;
  }
  return ret;
}

TlsStream::TlsStream(SSL* ssl) : ssl_(ssl) {
  BIO* socket = SSL_get_rbio(ssl_);
  BIO_set_callback_arg(socket, reinterpret_cast<char*>(this));
  BIO_set_callback_ex(socket,
                      [](BIO* b, int oper, const char* argp, size_t len, int argi, long argl,
                         int ret, size_t* processed) -> long {
                        return NoteSocketRead(b, oper, argp, len, argi, argl, ret, processed);
                      });
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

TlsStream::Io TlsStream::Read(char* data, size_t capacity) {
  // The error queue is per thread and shared by every session of the loop:
  // a stale entry would make SSL_get_error misreport this call.
  ERR_clear_error();
  // Set again by the BIO callback if this read goes to the socket; a read
  // served from what OpenSSL holds says nothing of the socket.
  socket_emptied_ = false;
  size_t n = 0;
  const int r = SSL_read_ex(ssl_, data, capacity, &n);
  if (r == 1) return {Outcome::kDone, n};
  return Classify(r);
}

TlsStream::Io TlsStream::Write(const char* data, size_t size) {
  ERR_clear_error();
  size_t n = 0;
  const int r = SSL_write_ex(ssl_, data, size, &n);
  if (r == 1) return {Outcome::kDone, n};
  return Classify(r);
}

TlsStream::Io TlsStream::Classify(int result) {
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
      return {Outcome::kWantRead};
    case SSL_ERROR_WANT_WRITE:
      return {Outcome::kWantWrite};
    case SSL_ERROR_ZERO_RETURN:
      return {Outcome::kClosed};
    case SSL_ERROR_SYSCALL:
      // EOF or a reset without close_notify: the peer is gone either way.
      ERR_clear_error();
      return {Outcome::kClosed};
    default: {
      const unsigned long code = ERR_peek_last_error();
      char text[256] = "TLS error";
      if (code != 0) ERR_error_string_n(code, text, sizeof text);
      error_ = text;
      ERR_clear_error();
      return {Outcome::kFailed};
    }
  }
}

bool TlsStream::Drained() const {
  // SSL_pending counts decrypted bytes of a record already opened;
  // SSL_has_pending also raw bytes read ahead, which may be a whole record
  // or only part of one: a part needs the socket anyway.
  return socket_emptied_ && SSL_pending(ssl_) == 0 && SSL_has_pending(ssl_) == 0;
}

bool TlsStream::established() const { return SSL_is_init_finished(ssl_) == 1; }

void TlsStream::Shutdown() {
  if (!established()) return;
  ERR_clear_error();
  // One attempt: the connection closes right after, so a close_notify the
  // socket cannot take now is not waited for.
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

}  // namespace skiff::server::internal
