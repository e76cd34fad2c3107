// MetricsListener: a small plain-HTTP endpoint of its own that serves only
// GET /metrics (--metrics-address), so an operator can keep the page off
// the port clients reach.
//
// It runs one thread with its own Asio event loop, away from the server's
// I/O loops: a slow scrape never delays a client. Each connection gets one
// answer and is closed (Connection: close): 200 with the page for
// GET /metrics, 404 for any other well-formed request, 400 for a malformed
// one, 431 for a request head over kMaxHeadBytes. A connection whose head
// has not arrived within kHeadTimeout, or whose answer is not taken within
// kWriteTimeout, is closed; past kMaxConnections open at once, a new one is
// closed unanswered. Bad input never stops the listener.
//
// Start and Stop are thread-safe; `page` runs on the listener's thread.
#ifndef SKIFF_SERVER_INTERNAL_METRICS_LISTENER_H_
#define SKIFF_SERVER_INTERNAL_METRICS_LISTENER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/logger.h"
#include "base/status.h"

namespace skiff::server::internal {

class MetricsListener {
 public:
  static constexpr size_t kMaxHeadBytes = 8 * 1024;
  static constexpr size_t kMaxConnections = 8;
  static constexpr std::chrono::seconds kHeadTimeout{5};
  static constexpr std::chrono::seconds kWriteTimeout{10};

  // The body of the page (Prometheus text format).
  using Page = std::function<std::string()>;

  // Binds `address` (HOST:PORT; [IPv6]:PORT; port 0 picks a free one) and
  // starts the thread. bad_request when the address does not parse,
  // unavailable when it cannot be bound. `logger` must outlive the
  // listener.
  static Result<std::unique_ptr<MetricsListener>> Start(const std::string& address, Page page,
                                                        Logger& logger);
  virtual ~MetricsListener() = default;

  virtual uint16_t port() const = 0;
  // Closes the acceptor and every connection and joins the thread.
  // Idempotent.
  virtual void Stop() = 0;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_METRICS_LISTENER_H_
