#include "server/server.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "server/internal/committer.h"
#include "server/internal/document_cache.h"
#include "server/internal/listener.h"
#include "server/internal/request_handler.h"
#include "sync/sync_engine.h"

namespace skiff::server {
namespace {

// Enough shards that two busy keys rarely share a lock.
constexpr size_t kShards = 256;

Status ValidateOptions(const ServerOptions& o) {
  if (o.max_frame_bytes < 64) return BadRequest("max_frame_bytes must be at least 64");
  if (o.max_in_flight == 0) return BadRequest("max_in_flight must be at least 1");
  if (o.max_output_bytes < 4096) return BadRequest("max_output_bytes must be at least 4096");
  if (o.max_buffered_bytes < o.max_output_bytes) {
    return BadRequest("max_buffered_bytes must be at least max_output_bytes");
  }
  for (auto [name, value] :
       {std::pair{"handshake_timeout", o.handshake_timeout},
        std::pair{"frame_timeout", o.frame_timeout}, std::pair{"send_timeout", o.send_timeout}}) {
    if (value.count() <= 0) return BadRequest(std::string(name) + " must be positive");
  }
  if (o.max_depth < 2) return BadRequest("max_depth must be at least 2");
  if (o.durability == Durability::kMemory && o.flush_interval.count() <= 0) {
    return BadRequest("flush_interval must be positive");
  }
  return Status::Ok();
}

}  // namespace

std::string_view DurabilityName(Durability d) {
  return d == Durability::kCommit ? "commit" : "memory";
}

std::optional<Durability> DurabilityFromName(std::string_view name) {
  if (name == "commit") return Durability::kCommit;
  if (name == "memory") return Durability::kMemory;
  return std::nullopt;
}

class Server::Impl {
 public:
  Impl(const ServerOptions& options, store::Store& store, const Clock& clock,
       std::unique_ptr<sync::SyncEngine> sync)
      : options_(options),
        cache_(store, clock, kShards),
        committer_(store, options.durability, options.flush_interval),
        sync_(std::move(sync)),
        handler_(options, store, cache_, committer_, *sync_) {
    // Memory mode's writes are read from the cache when committed. The
    // committer stops (its destructor) before the cache it reads goes.
    committer_.set_latest(
        [this](std::string_view table, std::string_view key, std::optional<std::string>* text) {
          return cache_.LatestText(table, key, text);
        });
  }

  ~Impl() { StopSweeper(); }

  // Moves idle documents down the tiers. The wait between passes is real
  // time; idleness is measured on the Clock, so tests drive it by hand.
  void StartSweeper() {
    using std::chrono::milliseconds;
    auto pack = options_.pack_after.count() > 0 ? options_.pack_after : options_.evict_after;
    auto evict = options_.evict_after.count() > 0 ? options_.evict_after : options_.pack_after;
    if (pack.count() <= 0 && evict.count() <= 0) return;
    milliseconds period =
        std::clamp<milliseconds>(std::min(pack, evict) / 4, milliseconds(5), milliseconds(1000));
    sweeper_ = std::thread([this, period] {
      std::unique_lock<std::mutex> lock(sweep_mu_);
      while (!sweep_stop_) {
        if (sweep_cv_.wait_for(lock, period, [this] { return sweep_stop_; })) break;
        lock.unlock();
        cache_.Sweep(options_.pack_after, options_.evict_after, committer_.written());
        lock.lock();
      }
    });
  }

  void StopSweeper() {
    {
      std::lock_guard<std::mutex> lock(sweep_mu_);
      sweep_stop_ = true;
    }
    sweep_cv_.notify_all();
    if (sweeper_.joinable()) sweeper_.join();
  }

  Status Listen(const ServerOptions& options, const Clock& clock) {
    internal::ListenerOptions lo;
    lo.address = options.address;
    lo.port = options.port;
    lo.io_threads = options.io_threads > 0 ? options.io_threads
                                           : std::max(1u, std::thread::hardware_concurrency());
    // Frames a little over the protocol limit still reach the handler, which
    // answers too_large before closing; beyond twice the limit the listener
    // closes the connection (1009) from the frame's header, unread.
    lo.max_message_bytes = options.max_frame_bytes * 2;
    lo.idle_timeout = options.idle_timeout;
    lo.max_connections = options.max_connections;
    lo.max_connections_per_address = options.max_connections_per_address;
    lo.handshake_timeout = options.handshake_timeout;
    lo.frame_timeout = options.frame_timeout;
    lo.send_timeout = options.send_timeout;
    lo.max_output_bytes = options.max_output_bytes;
    lo.max_in_flight = options.max_in_flight;
    lo.max_buffered_bytes = options.max_buffered_bytes;
    Result<std::unique_ptr<internal::Listener>> listener =
        internal::Listener::Start(lo, handler_, clock);
    if (!listener.ok()) return listener.status();
    listener_ = std::move(*listener);
    handler_.set_network_stats([this] { return listener_->stats(); });
    return Status::Ok();
  }

  uint16_t port() const { return listener_->port(); }

  Status Stop() {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopped_) return stop_status_;
    stopped_ = true;
    listener_->StopAccepting();
    // Replies of writes and pushes still committing go out before the
    // connections close.
    stop_status_ = committer_.Flush();
    // Pushes still queued commit and are answered, and held waits are
    // answered (changed: false), before the connections close: the replies
    // go out ahead of each connection's close frame.
    sync_->Stop();
    listener_->Shutdown(std::chrono::seconds(2));
    StopSweeper();
    committer_.Stop();
    return stop_status_;
  }

 private:
  const ServerOptions options_;
  internal::DocumentCache cache_;
  internal::Committer committer_;
  std::unique_ptr<sync::SyncEngine> sync_;
  internal::RequestHandler handler_;
  std::unique_ptr<internal::Listener> listener_;
  std::mutex stop_mu_;
  bool stopped_ = false;  // guarded by stop_mu_
  Status stop_status_;    // guarded by stop_mu_
  std::thread sweeper_;
  std::mutex sweep_mu_;
  std::condition_variable sweep_cv_;
  bool sweep_stop_ = false;  // guarded by sweep_mu_
};

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, store::Store& store,
                                              const Clock& clock) {
  SKIFF_RETURN_IF_ERROR(ValidateOptions(options));
  // The engine only reads the clock (Now() is const); SyncEngine::Start takes
  // a non-const reference, hence the cast.
  Result<std::unique_ptr<sync::SyncEngine>> sync = sync::SyncEngine::Start(store, clock);
  if (!sync.ok()) return sync.status();
  auto impl = std::make_unique<Impl>(options, store, clock, std::move(*sync));
  SKIFF_RETURN_IF_ERROR(impl->Listen(options, clock));
  impl->StartSweeper();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { (void)Stop(); }

uint16_t Server::port() const { return impl_->port(); }

Status Server::Stop() { return impl_->Stop(); }

}  // namespace skiff::server
