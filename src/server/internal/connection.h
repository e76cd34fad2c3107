// Connection: what the request layer sees of one client connection, without
// any socket type, plus that connection's session state.
//
// Send and Close are thread-safe (replies of committed writes are sent from
// the committer thread), and so are Post, PostAfter and ReleaseBarrier. The session
// fields (`user`, `permissions`, `groups`) are written only on the
// connection's I/O thread, by its message handler or a task it Posts; a
// store worker reads them while it runs one of the connection's requests,
// and the connection is not read meanwhile (`barrier`), so they need no
// lock. Counters are atomic; `waits` has its own lock.
#ifndef SKIFF_SERVER_INTERNAL_CONNECTION_H_
#define SKIFF_SERVER_INTERNAL_CONNECTION_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/internal/bootstrap_read_ahead.h"
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
  // Queues the text frame head + *body, where `body` is shared by the
  // frames of many connections (a watched change, encoded once).
  virtual void SendShared(std::string_view head, std::shared_ptr<const std::string> body) {
    std::string frame;
    frame.reserve(head.size() + body->size());
    frame.append(head).append(*body);
    Send(std::move(frame));
  }
  // Bytes queued to the peer and not yet sent (0 when not known): where
  // pushed events wait instead, bounded (watch_hub.h).
  virtual size_t unsent_bytes() const { return 0; }
  // Starts the closing handshake after the frames already queued.
  virtual void Close(uint16_t code, const std::string& reason) = 0;
  // Runs `fn` on one of the server's I/O threads, so work handed over by
  // another thread (the sync engine's) does not run on that thread. Dropped
  // when the connection is gone. The default runs it at once.
  virtual void Post(std::function<void()> fn) { fn(); }
  // Connections that return the same non-null loop() share one I/O thread.
  // RunOnLoop runs `fn` on it, also once this connection closed (work for
  // the loop's other connections: one task delivers a change to all of
  // them). The defaults: no loop, and `fn` runs at once.
  virtual const void* loop() const { return nullptr; }
  virtual void RunOnLoop(std::function<void()> fn) { fn(); }
  // The same once `delay` has passed (a request held for a moment). The
  // default does not wait.
  virtual void PostAfter(std::chrono::milliseconds delay, std::function<void()> fn) {
    (void)delay;
    Post(std::move(fn));
  }

  // Session (owned by the connection's message handler; see above).
  std::optional<std::string> user;
  Permissions permissions;
  // Sync groups read at login: the engine's Caller for this session.
  std::shared_ptr<const std::vector<std::string>> groups;
  // A session opened with a token ends at this Unix second (the token's
  // exp plus the leeway): its next request is refused and logs it out.
  // 0 = a session that does not expire.
  int64_t session_ends_at_s = 0;
  // Held sync waits (thread-safe on its own).
  HeldWaits waits;
  // The next bootstrap page, read ahead: touched by this connection's
  // bootstrap requests, one at a time on a worker under `barrier`, and by
  // its push and logout on the I/O thread, which run only while none of its
  // requests is on a worker.
  BootstrapReadAhead read_ahead;

  // Set once the connection closed, under the watch hub's lock: a watch
  // opened by a request still running on a store worker is then refused.
  bool watches_closed = false;
  // The watch hub's record of this connection: its slot + 1, 0 for none.
  // Under the hub's lock. (In the padding after watches_closed.)
  uint32_t watch_sub = 0;
  // Requests waiting for a commit whose reply has not been sent yet; at the
  // listener's limit the connection is not read.
  std::atomic<size_t> in_flight{0};
  // Requests running on a store worker (RequestHandler::Offload): while any
  // is, the connection is not read, so its requests take effect in order.
  std::atomic<int> barrier{0};
  // A request counted in `barrier` is done: lowers it and reads on.
  virtual void ReleaseBarrier() { barrier.fetch_sub(1, std::memory_order_acq_rel); }
  // The client's IP address as text ("" when not known), for the limits
  // per address; fixed before the first request, so any thread may read it.
  virtual std::string_view remote_address() const { return {}; }
  // Steady-clock time (ns) at which the bytes being handled were read: a
  // request's latency counts from there. One clock read per read serves
  // every request in it. Written and read on the I/O thread; 0 when the
  // connection does not keep it.
  int64_t read_at_ns = 0;
  // Clock time of the last frame received, in nanoseconds.
  std::atomic<int64_t> last_active_ns{0};
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_CONNECTION_H_
