// Listener: the WebSocket server endpoint (websocketpp on standalone Asio).
//
// This header keeps websocketpp out of everything that includes it; only
// listener.cc compiles the library. The listener accepts connections, sets
// TCP_NODELAY, turns frames into handler calls and closes idle connections.
// Handler calls for one connection never overlap (they run on its strand);
// calls for different connections may run at once on different I/O threads.
// Public methods are thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_LISTENER_H_
#define SKIFF_SERVER_INTERNAL_LISTENER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"
#include "server/internal/connection.h"

namespace skiff::server::internal {

class ListenerHandler {
 public:
  virtual ~ListenerHandler() = default;
  virtual void OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) = 0;
  virtual void OnBinary(const std::shared_ptr<Connection>& conn) = 0;
  virtual void OnClose(const std::shared_ptr<Connection>& conn) = 0;
};

struct ListenerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  size_t io_threads = 1;
  // Frames up to this size reach the handler (which rejects the ones over the
  // protocol limit with a reply); larger ones are refused by the library.
  size_t max_message_bytes = 32 * 1024 * 1024;
  std::chrono::milliseconds idle_timeout{0};  // 0 = never
};

class Listener {
 public:
  // Binds, listens and starts the I/O threads. unavailable when the address
  // cannot be bound, bad_request when it cannot be parsed.
  static Result<std::unique_ptr<Listener>> Start(const ListenerOptions& options,
                                                 ListenerHandler& handler, const Clock& clock);
  virtual ~Listener() = default;

  virtual uint16_t port() const = 0;
  virtual size_t connections() const = 0;
  // Stops accepting; open connections keep working.
  virtual void StopAccepting() = 0;
  // Closes every connection (going away), waits up to `grace` for them to
  // finish, then stops the I/O threads and joins them. Idempotent.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_LISTENER_H_
