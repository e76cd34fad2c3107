// The listener on standalone Asio: I/O loops, the acceptor, the connection
// limits and what happens when descriptors run out.
#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include "server/internal/listener.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/mutex.h"
#include "server/internal/io_loop.h"
#include "server/internal/listener_shared.h"
#include "server/internal/socket_connection.h"

#include "ws/handshake.h"

namespace skiff::server::internal {
namespace {

using asio::ip::tcp;

// Descriptors kept for everything but client connections: the store's files
// or sockets, the loops' epoll and event descriptors, logs, pipes.
constexpr uint64_t kReservedDescriptors = 64;
// After accept found no descriptor and none could be freed, wait this long
// before accepting again (accept would only fail again at once).
constexpr std::chrono::milliseconds kAcceptBackoff{100};

uint64_t DescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return limit.rlim_cur;
}

// The connection limit in force: the configured one, or what the
// descriptor limit allows, whichever is smaller (said loudly when the
// configured one does not fit).
size_t ResolveMaxConnections(size_t configured, Logger& logger) {
  const uint64_t limit = DescriptorLimit();
  const size_t by_descriptors = limit > kReservedDescriptors * 2
                                    ? static_cast<size_t>(limit - kReservedDescriptors)
                                    : static_cast<size_t>(std::max<uint64_t>(limit / 2, 1));
  if (configured == 0) return by_descriptors;
  if (configured > by_descriptors) {
    Logf(logger, LogLevel::kWarning, "listener",
         "max-connections %zu does not fit the descriptor limit of %llu open files; serving at "
         "most %zu connections",
         configured, static_cast<unsigned long long>(limit), by_descriptors);
    return by_descriptors;
  }
  return configured;
}

bool IsDescriptorExhaustion(const asio::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == std::errc::too_many_files_open_in_system ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

class AsioListener final : public Listener {
 public:
  AsioListener(const ListenerOptions& options, ListenerHandler& handler, const Clock& clock,
               Logger& logger)
      : shared_(options, handler, clock, logger) {}

  ~AsioListener() override {
    Shutdown(std::chrono::milliseconds(0));
    if (reserve_fd_ >= 0) ::close(reserve_fd_);
  }

  Status Init() {
    const ListenerOptions& o = shared_.options;
    shared_.max_connections = ResolveMaxConnections(o.max_connections, shared_.logger);
    const size_t threads = std::max<size_t>(1, o.io_threads);
    for (size_t i = 0; i < threads; ++i) loops_.push_back(std::make_unique<IoLoop>(shared_));
    IoLoop& first = *loops_.front();
    acceptor_ = std::make_unique<tcp::acceptor>(first.context());
    backoff_ = std::make_unique<asio::steady_timer>(first.context());

    asio::error_code ec;
    const asio::ip::address address = asio::ip::make_address(o.address, ec);
    if (ec) return BadRequest("cannot parse listen address '" + o.address + "'");
    const tcp::endpoint endpoint(address, o.port);
    acceptor_->open(endpoint.protocol(), ec);
    if (!ec) acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_->bind(endpoint, ec);
    if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Unavailable("cannot listen on " + o.address + ":" + std::to_string(o.port) + ": " +
                         ec.message());
    }
    // Synchronous accepts (the reserve path) must not block.
    acceptor_->non_blocking(true, ec);
    port_ = acceptor_->local_endpoint(ec).port();
    if (ec) return Internal("cannot read the bound port: " + ec.message());
    reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

    for (auto& loop : loops_) loop->Start();
    asio::post(first.context(), [this] { Accept(); });
    return Status::Ok();
  }

  uint16_t port() const override { return port_; }

  std::vector<IoLoop*> loops() const override {
    std::vector<IoLoop*> all;
    for (const auto& loop : loops_) all.push_back(loop.get());
    return all;
  }

  size_t connections() const override {
    return static_cast<size_t>(shared_.connections.load(std::memory_order_relaxed));
  }

  ListenerStats stats() const override {
    ListenerStats s;
    auto get = [](const auto& counter) {
      return static_cast<uint64_t>(
          std::max<int64_t>(0, static_cast<int64_t>(counter.load(std::memory_order_relaxed))));
    };
    s.connections = get(shared_.connections);
    s.accepted = get(shared_.accepted);
    s.refused = get(shared_.refused);
    s.descriptor_exhaustion = get(shared_.descriptor_exhaustion);
    s.handshake_failures = get(shared_.handshake_failures);
    s.protocol_errors = get(shared_.protocol_errors);
    s.tls_failures = get(shared_.tls_failures);
    s.frame_timeouts = get(shared_.frame_timeouts);
    s.send_timeouts = get(shared_.send_timeouts);
    s.idle_closes = get(shared_.idle_closes);
    s.paused = get(shared_.paused);
    s.buffered_input_bytes = get(shared_.input_bytes);
    s.buffered_output_bytes = get(shared_.output_bytes);
    s.max_buffered_bytes = shared_.options.max_buffered_bytes;
    s.max_connections = shared_.max_connections;
    s.health_checks = get(shared_.health_checks);
    s.batched_sends = get(shared_.batched_sends);
    s.batch_system_calls = get(shared_.batch_system_calls);
    return s;
  }

  void StopAccepting() override {
    if (!accepting_.exchange(false)) return;
    MutexLock lock(&shutdown_mu_);
    if (loops_.empty() || stopped_) return;
    asio::post(loops_.front()->context(), [this] {
      asio::error_code ec;
      acceptor_->close(ec);
      backoff_->cancel();
    });
  }

  void Shutdown(std::chrono::milliseconds grace) override {
    StopAccepting();
    MutexLock lock(&shutdown_mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& loop : loops_) {
      IoLoop* l = loop.get();
      asio::post(l->context(), [l] {
        l->ForEach([](SocketConnection& c) { c.Close(kCloseGoingAway, "server shutting down"); });
      });
    }
    {
      MutexLock closed(&shared_.closed_mu);
      const Clock::TimePoint deadline = shared_.clock.Now() + grace;
      while (shared_.connections.load(std::memory_order_relaxed) != 0 &&
             shared_.clock.WaitUntil(shared_.closed_cv, shared_.closed_mu, deadline)) {
      }
    }
    for (auto& loop : loops_) loop->Stop();
    for (auto& loop : loops_) loop->Join();
    // The threads are gone: end what is left here, then free the loops.
    for (auto& loop : loops_) loop->TerminateAll();
    acceptor_.reset();
    backoff_.reset();
    loops_.clear();
  }

 private:
  // Runs on the first loop's thread, like every use of the acceptor.
  void Accept() {
    if (!accepting_.load()) return;
    IoLoop& target = *loops_[next_loop_++ % loops_.size()];
    acceptor_->async_accept(target.context(),
                            [this, &target](const asio::error_code& ec, tcp::socket socket) {
                              if (ec == asio::error::operation_aborted) return;
                              if (ec) return OnAcceptError(ec);
                              exhausted_ = false;
                              Admit(target, std::move(socket));
                              Accept();
                            });
  }

  void Admit(IoLoop& target, tcp::socket socket) {
    shared_.accepted.fetch_add(1, std::memory_order_relaxed);
    std::string key;
    if (shared_.options.max_connections_per_address > 0) {
      asio::error_code ec;
      tcp::endpoint peer = socket.remote_endpoint(ec);
      if (ec) return;  // already gone
      key = peer.address().to_string();
    }
    std::string refusal;
    if (!shared_.Admit(key, &refusal)) {
      shared_.refused.fetch_add(1, std::memory_order_relaxed);
      // Refusals are answered in words, but only a few at a time: a flood
      // of them must not use the descriptors kept for the store.
      if (shared_.refusing.load(std::memory_order_relaxed) >= kMaxRefusing) return;
      shared_.refusing.fetch_add(1, std::memory_order_relaxed);
      key.clear();
    }
    asio::post(target.context(), [this, &target, socket = std::move(socket), key = std::move(key),
                                  refusal = std::move(refusal)]() mutable {
      SocketConnection::Start(target, shared_, std::move(socket), std::move(key),
                              std::move(refusal));
    });
  }

  void OnAcceptError(const asio::error_code& ec) {
    if (!IsDescriptorExhaustion(ec)) return Accept();  // the peer gave up; go on
    if (!exhausted_) {
      exhausted_ = true;
      shared_.descriptor_exhaustion.fetch_add(1, std::memory_order_relaxed);
      Logf(shared_.logger, LogLevel::kError, "listener",
           "out of file descriptors (%s; the limit is %llu open files): new connections are "
           "refused until some close",
           ec.message().c_str(), static_cast<unsigned long long>(DescriptorLimit()));
    }
    // One descriptor is kept in reserve: free it, take the waiting
    // connection, tell it why in words and close it, so connections past
    // the limit are refused instead of hanging. If that frees nothing,
    // wait before trying again rather than spin on accept.
    if (RefuseWithReserve()) return Accept();
    backoff_->expires_after(kAcceptBackoff);
    backoff_->async_wait([this](const asio::error_code& wait_ec) {
      if (!wait_ec) Accept();
    });
  }

  bool RefuseWithReserve() {
    if (reserve_fd_ < 0) reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (reserve_fd_ < 0) return false;
    ::close(reserve_fd_);
    reserve_fd_ = -1;
    tcp::socket socket(loops_.front()->context());
    asio::error_code ec;
    acceptor_->accept(socket, ec);
    if (!ec) {
      shared_.accepted.fetch_add(1, std::memory_order_relaxed);
      shared_.refused.fetch_add(1, std::memory_order_relaxed);
      // Read what the client sent, so the close is a FIN, not a reset that
      // could discard the answer; then answer and close.
      socket.non_blocking(true, ec);
      char scratch[4096];
      (void)socket.read_some(asio::buffer(scratch), ec);
      const std::string answer = ws::PlainResponse(
          503, "Service Unavailable",
          "skiffd has no file descriptor left for another connection; try again later\n",
          "Retry-After: 1\r\n");
      (void)socket.send(asio::buffer(answer), 0, ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
      socket.close(ec);
    }
    reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return !ec;
  }

  static constexpr int64_t kMaxRefusing = 32;

  ListenerShared shared_;
  std::vector<std::unique_ptr<IoLoop>> loops_;   // set by Init; cleared by Shutdown
  std::unique_ptr<tcp::acceptor> acceptor_;      // first loop's thread only
  std::unique_ptr<asio::steady_timer> backoff_;  // first loop's thread only
  size_t next_loop_ = 0;                         // first loop's thread only
  bool exhausted_ = false;                       // first loop's thread only
  int reserve_fd_ = -1;                          // first loop's thread only
  uint16_t port_ = 0;
  std::atomic<bool> accepting_{true};
  Mutex shutdown_mu_;
  bool stopped_ SKIFF_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace

Result<std::unique_ptr<Listener>> Listener::Start(const ListenerOptions& options,
                                                  ListenerHandler& handler, const Clock& clock,
                                                  Logger& logger) {
  auto listener = std::make_unique<AsioListener>(options, handler, clock, logger);
  SKIFF_RETURN_IF_ERROR(listener->Init());
  return std::unique_ptr<Listener>(std::move(listener));
}

}  // namespace skiff::server::internal
