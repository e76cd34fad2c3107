// Server: a running Skiff server (WebSocket listener, sessions, documents,
// group commit) over a Store the caller owns.
//
// Start it in-process from tests and benchmarks, or through skiffd. Start,
// port, Stop and the destructor are thread-safe; Stop may be called from any
// thread but not from a request handler.
#ifndef SKIFF_SERVER_SERVER_H_
#define SKIFF_SERVER_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "base/clock.h"
#include "base/status.h"
#include "server/server_options.h"
#include "store/store.h"

namespace skiff::server {

namespace internal {
class ListenerHandler;
}  // namespace internal

class Server {
 public:
  // Builds what the listener calls in place of the request handler: a
  // wrapper that forwards to it (leveldb's EnvWrapper), so tests can inject
  // faults (support/losing_add_handler.h) without a branch in the server.
  using HandlerWrap =
      std::function<std::unique_ptr<internal::ListenerHandler>(internal::ListenerHandler& handler)>;

  // Binds and starts serving. `store` and `clock` must outlive the server.
  // unavailable when the address cannot be bound; bad_request for invalid
  // options. `wrap`, when set, wraps the request handler.
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options, store::Store& store,
                                               const Clock& clock, HandlerWrap wrap = nullptr);

  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  uint16_t port() const;

  // Graceful shutdown: stops accepting, writes every applied change to the
  // store, closes connections (going away) and joins the threads. Returns
  // the store's error when the final flush failed. Idempotent.
  Status Stop();

  // Re-reads the TLS certificate and key (SIGHUP): new connections get the
  // new pair, open ones keep theirs. On a fault the old pair stays in use,
  // the fault is logged and returned. bad_request without TLS.
  Status ReloadTls();

 private:
  class Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skiff::server

#endif  // SKIFF_SERVER_SERVER_H_
