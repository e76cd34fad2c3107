// TlsStream: one server-side TLS session over a non-blocking socket, for
// SocketConnection. The handshake runs inside the first reads; a read or a
// write that cannot go on says whether it waits for readability or for
// writability, and the connection waits for that on its loop.
//
// Loop thread only (as the connection that owns it).
#ifndef SKIFF_SERVER_INTERNAL_TLS_STREAM_H_
#define SKIFF_SERVER_INTERNAL_TLS_STREAM_H_

#include <cstddef>
#include <string>

typedef struct ssl_st SSL;

namespace skiff::server::internal {

class TlsStream {
 public:
  enum class Outcome {
    kDone,       // `bytes` were read or written
    kWantRead,   // retry once the socket is readable
    kWantWrite,  // retry once the socket is writable
    kClosed,     // the peer ended the session (close_notify or EOF)
    kFailed,     // a TLS error (not TLS, bad record, handshake refused)
  };
  struct Io {
    Outcome outcome;
    size_t bytes = 0;
  };

  // Takes ownership of `ssl` (in accept state, on the socket's descriptor).
  explicit TlsStream(SSL* ssl);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  Io Read(char* data, size_t capacity);
  // A retry after kWantWrite must offer the same bytes again (it may offer
  // more after them).
  Io Write(const char* data, size_t size);
  // Nothing more can be read until the socket becomes readable again:
  // OpenSSL holds no whole record, and its last read from the socket got
  // less than it asked for (the socket was emptied). Saves the read that
  // would only say "would block".
  bool Drained() const;
  // The handshake completed.
  bool established() const;
  // Sends close_notify if the socket takes it now; never waits.
  void Shutdown();
  // Why the last kFailed happened, for a log line.
  const std::string& error() const { return error_; }

 private:
  Io Classify(int result);

  SSL* const ssl_;
  std::string error_;
  // The socket BIO's last read returned less than asked (set by a BIO
  // callback, as OpenSSL reads ahead on its own).
  bool socket_emptied_ = false;
  friend long NoteSocketRead(void*, int, const char*, size_t, int, long, int, size_t*);
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_TLS_STREAM_H_
