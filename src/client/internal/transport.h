// Transport: WebSocket client connections (websocketpp on standalone Asio)
// behind an interface, so only transport.cc compiles websocketpp.
//
// One Transport runs one I/O thread that owns all its connections, plain and
// TLS alike; every handler runs on that thread. Send, Close, Post and After are thread-safe.
// Tests also use it directly to send frames a well-behaved client never
// would (binary frames, malformed JSON).
#ifndef SKIFF_CLIENT_INTERNAL_TRANSPORT_H_
#define SKIFF_CLIENT_INTERNAL_TRANSPORT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace skiff::client::internal {

// How Open secures a connection. Off: ws://. On: wss:// with SNI, the
// server's chain checked against `ca_file` (empty: the system's store) and
// its name (or IP address) checked against the host connected to, TLS 1.2
// at least. `insecure` skips both checks; it exists for tests only.
struct TransportTls {
  bool enabled = false;
  std::string ca_file;
  bool insecure = false;
};

struct TransportHandlers {
  std::function<void()> on_open;
  // `payload` is the handler's to keep: it may be moved from, which spares
  // a copy of a large reply.
  std::function<void(std::string& payload, bool binary)> on_message;
  // Once per connection, after on_open or instead of it when connecting
  // failed; `reason` says why.
  std::function<void(const std::string& reason)> on_close;
};

class TransportConnection {
 public:
  virtual ~TransportConnection() = default;
  // False when the connection is not open (the frame is dropped).
  virtual bool SendText(std::string_view payload) = 0;
  virtual bool SendBinary(std::string_view payload) = 0;
  virtual void Close() = 0;
};

class Transport {
 public:
  // Starts the I/O thread.
  static std::unique_ptr<Transport> Create();
  virtual ~Transport() = default;  // Shutdown()

  // Starts connecting to ws://host:port/ (wss:// when tls.enabled); the
  // result arrives through `handlers`. A CA file that cannot be read or a
  // certificate that fails a check ends in on_close with the reason
  // ("certificate verify failed: ..."). Never blocks.
  virtual std::shared_ptr<TransportConnection> Open(const std::string& host, uint16_t port,
                                                    const TransportTls& tls,
                                                    TransportHandlers handlers) = 0;
  // Runs `fn` on the I/O thread.
  virtual void Post(std::function<void()> fn) = 0;
  // Runs `fn` on the I/O thread after `delay` (real time).
  virtual void After(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  // Closes every connection and joins the I/O thread. Idempotent; not from
  // the I/O thread.
  virtual void Shutdown() = 0;
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_TRANSPORT_H_
