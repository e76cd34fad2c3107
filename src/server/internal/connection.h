// Connection: what the request layer sees of one client connection, without
// any socket type, plus that connection's session state.
//
// Send and Close are thread-safe (replies of committed writes are sent from
// the committer thread), and so is Post. The session fields (`user`,
// `permissions`, `groups`) are read and written only by the connection's own
// message handler, which its I/O thread runs serially, so they need no lock.
// Counters are atomic; `waits` has its own lock.
#ifndef SKIFF_SERVER_INTERNAL_CONNECTION_H_
#define SKIFF_SERVER_INTERNAL_CONNECTION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/internal/held_waits.h"
#include "server/permissions.h"

namespace skiff::server::internal {

// WebSocket close codes we use (RFC 6455 section 7.4.1).
inline constexpr uint16_t kCloseGoingAway = 1001;
inline constexpr uint16_t kCloseTooBig = 1009;
inline constexpr uint16_t kCloseNormal = 1000;

class Connection {
 public:
  virtual ~Connection() = default;

  // Queues a text frame; silently dropped once the connection is closed.
  virtual void Send(std::string frame) = 0;
  // The same for a frame the caller keeps (a reused buffer): a small one is
  // copied straight into the outgoing batch, with no string of its own.
  virtual void SendCopy(std::string_view frame) { Send(std::string(frame)); }
  // Starts the closing handshake after the frames already queued.
  virtual void Close(uint16_t code, const std::string& reason) = 0;
  // Runs `fn` on one of the server's I/O threads, so work handed over by
  // another thread (the sync engine's) does not run on that thread. Dropped
  // when the connection is gone. The default runs it at once.
  virtual void Post(std::function<void()> fn) { fn(); }

  // Session (owned by the connection's message handler; see above).
  std::optional<std::string> user;
  Permissions permissions;
  // Sync groups read at login: the engine's Caller for this session.
  std::shared_ptr<const std::vector<std::string>> groups;
  // Held sync waits (thread-safe on its own).
  HeldWaits waits;

  // Requests received whose reply has not been sent yet.
  std::atomic<size_t> in_flight{0};
  // Clock time of the last frame received, in nanoseconds.
  std::atomic<int64_t> last_active_ns{0};
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_CONNECTION_H_
