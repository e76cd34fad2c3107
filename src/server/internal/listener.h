// Listener: the WebSocket server endpoint, on standalone Asio with the
// frame codec of src/ws.
//
// This header keeps Asio out of everything that includes it. The listener
// accepts connections, answers the opening handshake (and a plain HTTP
// GET /healthz), turns frames into handler calls, applies back-pressure
// (a connection whose replies pile up, or that has too many requests in
// flight, is not read until they drain), enforces the connection, frame,
// handshake and buffer limits, and closes idle connections. Each connection
// belongs to one I/O thread: handler calls for one connection never overlap;
// calls for different connections may run at once on different threads.
// Public methods are thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_LISTENER_H_
#define SKIFF_SERVER_INTERNAL_LISTENER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "base/status.h"
#include "server/internal/connection.h"

namespace skiff::server {
class TlsContext;
}  // namespace skiff::server

namespace skiff::server::internal {

class IoLoop;

class ListenerHandler {
 public:
  virtual ~ListenerHandler() = default;
  virtual void OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) = 0;
  virtual void OnBinary(const std::shared_ptr<Connection>& conn) = 0;
  virtual void OnClose(const std::shared_ptr<Connection>& conn) = 0;
  // The body of GET /metrics (Prometheus text format), or nullopt when this
  // port does not serve it (404). Called on an I/O thread.
  virtual std::optional<std::string> MetricsPage() { return std::nullopt; }
};

struct ListenerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  // Each thread runs its own event loop and owns the connections given to
  // it (accepted connections are dealt out in turn).
  size_t io_threads = 1;
  // Messages up to this size reach the handler (which rejects the ones over
  // the protocol limit with a reply); a larger one closes the connection
  // (1009) as soon as its header says so, before it is read.
  size_t max_message_bytes = 32 * 1024 * 1024;
  std::chrono::milliseconds idle_timeout{0};  // 0 = never
  // Connections open at once (handshakes included); one more gets an HTTP
  // 503 refusal. 0 = as many as the descriptor limit allows.
  size_t max_connections = 0;
  // The same per remote address; 0 = no limit of its own.
  size_t max_connections_per_address = 0;
  // A handshake must complete within this time, in at most 8 KiB.
  std::chrono::milliseconds handshake_timeout{10000};
  // A frame (or fragmented message) must complete this long after its first
  // byte arrived; a connection holding an unfinished one longer is closed.
  std::chrono::milliseconds frame_timeout{30000};
  // A connection whose replies make no progress for this long (its peer
  // does not read) is closed.
  std::chrono::milliseconds send_timeout{30000};
  // Replies waiting to be sent on one connection; above it the connection
  // is not read (TCP back-pressure) until they drain.
  size_t max_output_bytes = 1024 * 1024;
  // Requests of one connection waiting for a commit (Connection::in_flight);
  // at the limit the connection is not read until replies go out.
  size_t max_in_flight = 1024;
  // All connections' buffered input and output together. Above it a
  // connection that holds buffered bytes is not read until they drain.
  size_t max_buffered_bytes = 256 * 1024 * 1024;
  // Serves wss:// (TLS, then the WebSocket upgrade) when set; plain ws://
  // otherwise. Shared with the server, which reloads it on SIGHUP.
  std::shared_ptr<TlsContext> tls;
  // Sends of one pass to many connections go to the kernel in one
  // io_uring submission when the kernel allows it; false: sendmsg each.
  bool io_uring = true;
};

// What the listener counts; every figure since start unless it says "now".
struct ListenerStats {
  uint64_t connections = 0;            // open now (handshakes included)
  uint64_t accepted = 0;               // TCP connections accepted
  uint64_t refused = 0;                // refused for a connection limit
  uint64_t descriptor_exhaustion = 0;  // times accept found no descriptor left
  uint64_t handshake_failures = 0;     // bad, oversized or timed-out handshakes
  uint64_t protocol_errors = 0;        // connections closed for a framing violation
  uint64_t tls_failures = 0;           // TLS handshakes refused or not TLS at all
  uint64_t frame_timeouts = 0;         // closed holding an unfinished frame too long
  uint64_t send_timeouts = 0;          // closed because their peer stopped reading
  uint64_t idle_closes = 0;            // closed by the idle timeout
  uint64_t paused = 0;                 // connections not read now (back-pressure)
  uint64_t buffered_input_bytes = 0;   // now
  uint64_t buffered_output_bytes = 0;  // now
  uint64_t max_buffered_bytes = 0;     // the budget
  uint64_t max_connections = 0;        // the limit in force
  uint64_t health_checks = 0;          // GET /healthz answered
  uint64_t batched_sends = 0;          // sends made through io_uring, many per system call
  uint64_t batch_system_calls = 0;     // the system calls those took
};

class Listener {
 public:
  // Binds, listens and starts the I/O threads. unavailable when the address
  // cannot be bound, bad_request when it cannot be parsed. `handler`,
  // `clock` and `logger` must outlive the listener.
  static Result<std::unique_ptr<Listener>> Start(const ListenerOptions& options,
                                                 ListenerHandler& handler, const Clock& clock,
                                                 Logger& logger);
  virtual ~Listener() = default;

  virtual uint16_t port() const = 0;
  virtual size_t connections() const = 0;
  virtual ListenerStats stats() const = 0;
  // The I/O loops, for connections the server opens itself (cluster links);
  // they run until Shutdown.
  virtual std::vector<IoLoop*> loops() const = 0;
  // Stops accepting; open connections keep working.
  virtual void StopAccepting() = 0;
  // Closes every connection (going away), waits up to `grace` (on the
  // Clock) for them to finish, then stops the I/O threads and joins them.
  // Idempotent.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_LISTENER_H_
