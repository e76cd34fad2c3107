#include "server/server.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "server/cluster/ownership.h"
#include "server/cluster/peer_links.h"
#include "server/cluster/router.h"
#include "server/cluster/watch_feed.h"
#include "server/internal/counted_store.h"
#include "server/internal/documents.h"
#include "server/internal/listener.h"
#include "server/internal/metrics_listener.h"
#include "server/internal/metrics_page.h"
#include "server/internal/request_handler.h"
#include "server/internal/store_workers.h"
#include "sync/cluster_sync_log.h"
#include "sync/sync_engine.h"

namespace skiff::server {
namespace {

// Enough shards that two busy keys rarely share a lock.
constexpr size_t kShards = 256;

internal::DocumentsOptions DocumentsOptionsOf(const ServerOptions& o,
                                              const cluster::Ownership* ownership) {
  internal::DocumentsOptions d;
  d.durability = o.durability;
  d.flush_interval = o.flush_interval;
  d.pack_after = o.pack_after;
  d.evict_after = o.evict_after;
  d.shards = kShards;
  d.max_unflushed_bytes = o.max_unflushed_bytes;
  d.max_unflushed_age = o.max_unflushed_age;
  d.stop_grace = o.stop_grace;
  d.watch.history_count = o.watch_history;
  d.watch.history_bytes = o.watch_history_bytes;
  d.watch.max_per_connection = o.max_watches_per_connection;
  d.watch.max_total = o.max_watches;
  d.watch.coalesce_bytes = o.watch_coalesce_bytes;
  d.watch.max_queue_bytes = o.watch_queue_bytes;
  // Cluster mode: writes are admitted only on partitions served here.
  d.ownership = ownership;
  return d;
}

// I/O threads when the options leave it to the server: measured with the
// load client on the same machine, one event loop served more than two on
// two cores (docs/benchmarks.md); beyond that, one per two cores.
size_t DefaultIoThreads() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return cores <= 2 ? 1 : cores / 2;
}

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
  if (o.watch_coalesce_bytes >= o.watch_queue_bytes) {
    return BadRequest("watch_coalesce_bytes must be below watch_queue_bytes");
  }
  if (o.max_unflushed_age.count() <= 0) return BadRequest("max_unflushed_age must be positive");
  if (o.durability == Durability::kMemory && o.flush_interval.count() <= 0) {
    return BadRequest("flush_interval must be positive");
  }
  if (o.cluster) {
    if (o.durability != Durability::kCommit) {
      // An owner that loses its lease cannot commit what it acknowledged.
      return BadRequest("cluster mode needs durability = commit");
    }
    if (o.cluster_secret.size() < 16) {
      return BadRequest("cluster mode needs a cluster secret of at least 16 characters");
    }
    if (o.cluster_lease < std::chrono::milliseconds(600)) {
      return BadRequest("cluster_lease must be at least 600 ms");
    }
  }
  if (o.tls_context == nullptr && o.tls.cert_file.empty() != o.tls.key_file.empty()) {
    return BadRequest("--tls-cert and --tls-key go together");
  }
  if (!o.cluster_tls_ca_file.empty()) {
    std::FILE* f = std::fopen(o.cluster_tls_ca_file.c_str(), "r");
    if (f == nullptr) {
      return BadRequest("cannot read --cluster-tls-ca " + o.cluster_tls_ca_file + ": " +
                        std::strerror(errno));
    }
    std::fclose(f);
  }
  return Status::Ok();
}

// Instances serve the same scheme, so links speak TLS when this one does.
cluster::PeerTls PeerTlsOf(const ServerOptions& o) {
  cluster::PeerTls tls;
  tls.enabled = o.tls_context != nullptr || !o.tls.cert_file.empty();
  tls.ca_file = o.cluster_tls_ca_file;
  return tls;
}

// What the main port's listener calls: the handler (or the router) for
// frames, and for /metrics the page with the store's errors added, or 404
// when the page has a listener of its own (--metrics-address).
class MainPortHandler final : public internal::ListenerHandler {
 public:
  MainPortHandler(internal::ListenerHandler& inner,
                  std::function<std::optional<std::string>()> page)
      : inner_(inner), page_(std::move(page)) {}
  void OnText(const std::shared_ptr<internal::Connection>& conn,
              std::string_view payload) override {
    inner_.OnText(conn, payload);
  }
  void OnBinary(const std::shared_ptr<internal::Connection>& conn) override {
    inner_.OnBinary(conn);
  }
  void OnClose(const std::shared_ptr<internal::Connection>& conn) override { inner_.OnClose(conn); }
  std::optional<std::string> MetricsPage() override { return page_(); }

 private:
  internal::ListenerHandler& inner_;
  const std::function<std::optional<std::string>()> page_;
};

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
  // `counted` wraps the store every part of the server uses (the sync
  // engine's too); the Impl keeps it alive past all of them.
  Impl(const ServerOptions& options, std::unique_ptr<internal::CountedStore> counted,
       const Clock& clock, std::unique_ptr<Logger> own_logger, Logger& logger,
       std::unique_ptr<sync::SyncEngine> sync)
      : options_(options),
        counted_(std::move(counted)),
        own_logger_(std::move(own_logger)),
        logger_(logger),
        links_(options.cluster ? std::make_unique<cluster::PeerLinks>(options.cluster_secret,
                                                                      logger_, PeerTlsOf(options))
                               : nullptr),
        ownership_(options.cluster ? MakeOwnership(options, clock) : nullptr),
        documents_(*counted_, clock, DocumentsOptionsOf(options, ownership_.get())),
        sync_(std::move(sync)),
        workers_(kStoreWorkers),
        handler_(options, *counted_, documents_, *sync_, workers_,
                 [this](internal::StatsFigures& figures) {
                   if (router_) router_->AddStats(figures);
                 }),
        // Cluster mode is the router wrapped around the handler: the
        // listener hands every frame to it, and it hands the handler what
        // runs here.
        router_(options.cluster ? std::make_unique<cluster::Router>(handler_, *ownership_, *links_,
                                                                    options.cluster_secret, clock)
                                : nullptr),
        entry_(router_ ? static_cast<internal::ListenerHandler&>(*router_) : handler_) {}

  // The ownership outlives the documents it admits writes to, and its Stop
  // drains them: it stops first (a no-op after Stop).
  ~Impl() {
    if (ownership_) ownership_->Stop();
  }

  // Before Listen: no write may race the build.
  Status LoadGeoIndexes() { return documents_.LoadGeoIndexes(); }

  // Cluster mode, before Listen: watches see every instance's changes
  // through the cluster's watch log.
  Status StartWatchFeed(const ServerOptions& options) {
    cluster::WatchFeedOptions o;
    o.store_url = options.store_url;
    o.logger = &logger_;
    // Room for an instance that falls behind by ten times what it keeps.
    o.retain = std::max<uint64_t>(10 * options.watch_history, 1000);
    SKIFF_ASSIGN_OR_RETURN(
        watch_feed_, cluster::WatchFeed::Start(*counted_, documents_.watches(), std::move(o)));
    handler_.set_cluster_watch(
        [feed = watch_feed_.get()](const std::string& table) { return feed->Follow(table); });
    return Status::Ok();
  }

  // Cluster mode: nothing is served until StartCluster.
  std::unique_ptr<cluster::Ownership> MakeOwnership(const ServerOptions& options,
                                                    const Clock& clock) {
    cluster::OwnershipOptions o;
    o.store_url = options.store_url;
    o.lease = options.cluster_lease;
    o.tick = std::max(std::chrono::milliseconds(50), options.cluster_lease / 15);
    o.logger = &logger_;
    o.clock = &clock;
    cluster::Ownership::Hooks hooks;
    hooks.forget = [this](const std::vector<uint32_t>& p) { documents_.Forget(p); };
    hooks.load = [this](const std::vector<uint32_t>& p) { return documents_.LoadPartitions(p); };
    hooks.drain = [this] { documents_.Drain(); };
    hooks.peers = [this](const std::map<uint64_t, std::string>& peers) {
      // A link to this instance too: a near's own share goes over it like
      // every other share (cluster/near_gather.h).
      std::map<uint64_t, std::string> links = peers;
      if (!peers.empty()) links[ownership_->id()] = cluster_address_;
      links_->Update(links);
    };
    return std::make_unique<cluster::Ownership>(o, std::move(hooks));
  }

  // After Listen, once the port is known.
  Status StartCluster(const ServerOptions& options) {
    std::string address = options.cluster_address;
    if (address.empty()) {
      const bool any = options.address == "0.0.0.0" || options.address == "::";
      address = (any ? std::string("127.0.0.1") : options.address) + ":" + std::to_string(port());
    }
    // Links to peers live on the listener's I/O loops, like its connections.
    links_->Start(listener_->loops());
    cluster_address_ = address;  // before the ownership thread reads it
    return ownership_->Start(address);
  }

  Status Listen(const ServerOptions& options, const Clock& clock, const HandlerWrap& wrap) {
    internal::ListenerOptions lo;
    lo.address = options.address;
    lo.port = options.port;
    lo.io_threads = options.io_threads > 0 ? options.io_threads : DefaultIoThreads();
    lo.io_uring = options.io_uring;
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
    tls_ = options.tls_context;
    if (tls_ == nullptr && !options.tls.cert_file.empty()) {
      SKIFF_ASSIGN_OR_RETURN(tls_, TlsContext::Load(options.tls));
    }
    lo.tls = tls_;
    if (tls_ != nullptr) {
      Logf(logger_, LogLevel::kInfo, "tls", "serving wss:// with %s", tls_->Describe().c_str());
    }
    if (wrap) wrapped_ = wrap(entry_);
    main_port_ = std::make_unique<MainPortHandler>(wrapped_ ? *wrapped_ : entry_,
                                                   [this]() -> std::optional<std::string> {
                                                     if (!options_.metrics_address.empty())
                                                       return std::nullopt;
                                                     return Page();
                                                   });
    SKIFF_ASSIGN_OR_RETURN(listener_, internal::Listener::Start(lo, *main_port_, clock, logger_));
    handler_.set_network_stats([this] { return listener_->stats(); });
    return Status::Ok();
  }

  // After Listen: the page counts the main listener's connections.
  Status ListenMetrics(const ServerOptions& options) {
    if (options.metrics_address.empty()) return Status::Ok();
    SKIFF_ASSIGN_OR_RETURN(metrics_listener_, internal::MetricsListener::Start(
                                                  options.metrics_address,
                                                  [this] { return Page().value_or(""); }, logger_));
    // Port 0 picks one: say which.
    Logf(logger_, LogLevel::kInfo, "metrics", "serving GET /metrics on port %u",
         static_cast<unsigned>(metrics_listener_->port()));
    return Status::Ok();
  }

  // The /metrics page, wherever it is served.
  std::optional<std::string> Page() {
    std::optional<std::string> page = entry_.MetricsPage();
    if (page) {
      const internal::StoreErrors errors = counted_->errors();
      internal::AppendStoreErrors(*page, errors.reads, errors.writes);
    }
    return page;
  }

  uint16_t metrics_port() const { return metrics_listener_ ? metrics_listener_->port() : 0; }

  uint16_t port() const { return listener_->port(); }

  Status ReloadTls() {
    if (tls_ == nullptr) return BadRequest("the server does not serve TLS");
    Status reloaded = tls_->Reload();
    if (reloaded.ok()) {
      Logf(logger_, LogLevel::kInfo, "tls", "certificate reloaded: %s", tls_->Describe().c_str());
    } else {
      Logf(logger_, LogLevel::kError, "tls", "certificate not reloaded, still serving %s: %s",
           tls_->Describe().c_str(), reloaded.message().c_str());
    }
    return reloaded;
  }

  Status Stop() {
    MutexLock lock(&stop_mu_);
    if (stopped_) return stop_status_;
    stopped_ = true;
    if (metrics_listener_) metrics_listener_->Stop();
    listener_->StopAccepting();
    // Give the partitions back first, so the others take over while this
    // one finishes (Ownership::Stop drains the writes admitted so far).
    if (ownership_) ownership_->Stop();
    // Requests waiting for the store finish first (their replies are
    // queued before the close).
    workers_.Stop();
    if (watch_feed_) watch_feed_->Stop();  // feeds the loops' connections: before they close
    (void)documents_.Flush();              // a failure here is retried by Stop below
    // Pushes still queued commit and are answered, and held waits are
    // answered (changed: false), before the connections close: the replies
    // go out ahead of each connection's close frame.
    sync_->Stop();
    // The links live on the listener's loops: closed while they run. Every
    // peer routes nothing here any more (Ownership::Stop waited for it).
    if (links_) links_->Stop();
    listener_->Shutdown(std::chrono::seconds(2));
    // Whatever was applied is written (retried for a while if the store
    // fails); an error names what could not be.
    stop_status_ = documents_.Stop();
    return stop_status_;
  }

 private:
  // Threads for requests that wait for the store: the store serialises its
  // calls anyway; two keep one slow call from holding up the rest of the
  // queue behind it for longer than that call.
  static constexpr size_t kStoreWorkers = 2;

  const ServerOptions options_;
  // Before everything that calls the store, so it is destroyed after them.
  const std::unique_ptr<internal::CountedStore> counted_;
  const std::unique_ptr<Logger> own_logger_;  // when options.logger is null
  Logger& logger_;
  // Cluster mode only (null otherwise); the links before the ownership,
  // whose thread updates them, and the ownership before the documents,
  // which take it at construction.
  const std::unique_ptr<cluster::PeerLinks> links_;
  std::string cluster_address_;  // host:port peers reach this instance at
  const std::unique_ptr<cluster::Ownership> ownership_;
  internal::Documents documents_;
  std::unique_ptr<sync::SyncEngine> sync_;
  internal::StoreWorkers workers_;
  internal::RequestHandler handler_;
  std::unique_ptr<cluster::WatchFeed> watch_feed_;  // cluster mode only
  const std::unique_ptr<cluster::Router> router_;
  internal::ListenerHandler& entry_;                      // the router, or the handler alone
  std::unique_ptr<internal::ListenerHandler> wrapped_;    // around entry_ (Start's wrap)
  std::unique_ptr<internal::ListenerHandler> main_port_;  // around wrapped_ or entry_
  std::unique_ptr<internal::Listener> listener_;
  std::shared_ptr<TlsContext> tls_;                              // null: plain ws://
  std::unique_ptr<internal::MetricsListener> metrics_listener_;  // --metrics-address only
  Mutex stop_mu_;
  bool stopped_ SKIFF_GUARDED_BY(stop_mu_) = false;
  Status stop_status_ SKIFF_GUARDED_BY(stop_mu_);
};

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, store::Store& store,
                                              const Clock& clock, HandlerWrap wrap) {
  SKIFF_RETURN_IF_ERROR(ValidateOptions(options));
  if (options.cluster && store.kind() != "postgres") {
    return BadRequest("cluster mode needs a PostgreSQL store; the " + std::string(store.kind()) +
                      " store is one server's alone");
  }
  // Without a logger of the caller's the server writes its lines to stderr.
  std::unique_ptr<Logger> own_logger;
  if (options.logger == nullptr) own_logger = std::make_unique<StderrLogger>("skiffd");
  Logger& logger = options.logger != nullptr ? *options.logger : *own_logger;
  // Every store call of the server goes through it, so /metrics counts the
  // store's errors in one place.
  auto counted = std::make_unique<internal::CountedStore>(store);
  sync::SyncOptions sync_options;
  sync_options.logger = &logger;
  std::unique_ptr<sync::SyncLog> sync_log;  // null: a LocalSyncLog, one server alone
  if (options.cluster) {
    // Numbered by the shared counter and woken by the others' commits.
    sync::ClusterSyncLogOptions cluster_log;
    cluster_log.store_url = options.store_url;
    cluster_log.logger = &logger;
    SKIFF_ASSIGN_OR_RETURN(sync_log, sync::ClusterSyncLog::Open(*counted, std::move(cluster_log)));
  }
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<sync::SyncEngine> sync,
      sync::SyncEngine::Start(*counted, clock, sync_options, std::move(sync_log)));
  auto impl = std::make_unique<Impl>(options, std::move(counted), clock, std::move(own_logger),
                                     logger, std::move(sync));
  SKIFF_RETURN_IF_ERROR(impl->LoadGeoIndexes());
  if (options.cluster) SKIFF_RETURN_IF_ERROR(impl->StartWatchFeed(options));
  SKIFF_RETURN_IF_ERROR(impl->Listen(options, clock, wrap));
  if (options.cluster) SKIFF_RETURN_IF_ERROR(impl->StartCluster(options));
  SKIFF_RETURN_IF_ERROR(impl->ListenMetrics(options));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { (void)Stop(); }

uint16_t Server::port() const { return impl_->port(); }

Status Server::Stop() { return impl_->Stop(); }

Status Server::ReloadTls() { return impl_->ReloadTls(); }

}  // namespace skiff::server
