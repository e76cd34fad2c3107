// RequestHandler: executes v1 requests for the listener's connections.
//
// Each frame is decoded (request_scanner.h, protocol.h), then dispatched
// through one table of ops: a row says who may run the op (anyone, a
// session, readers or writers of the table) and which method runs it.
// Reads reply at once; writes go through Documents, the one write path, and
// reply when it acknowledges them; pushes after their commit; held waits
// when the engine answers them. Nothing here blocks an I/O thread on the
// store: a request that must wait for it (a login, a scan, a pull or
// bootstrap, a document not in memory) runs again on a store worker, and
// its connection is not read until it is answered, so a connection's
// requests still take effect in the order it sent them.
// Thread-safe: called from every I/O thread and the store workers;
// per-connection calls are serial (see listener.h and Connection::barrier).
#ifndef SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_
#define SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/cluster/ownership.h"
#include "server/cluster/peer_links.h"
#include "server/internal/bootstrap_read_ahead.h"
#include "server/internal/documents.h"
#include "server/internal/listener.h"
#include "server/internal/protocol.h"
#include "server/internal/store_workers.h"
#include "server/server_options.h"
#include "store/store.h"
#include "sync/sync_engine.h"

namespace skiff::server::internal {

class RequestHandler final : public ListenerHandler {
 public:
  RequestHandler(const ServerOptions& options, store::Store& store, Documents& documents,
                 sync::SyncEngine& sync, StoreWorkers& workers);

  // Where `stats` reads the listener's figures.
  void set_network_stats(std::function<ListenerStats()> stats) {
    network_stats_ = std::move(stats);
  }

  // A test seam, never used in production: acknowledge one `add` in n
  // without applying it (0 = off), so a test can prove that the suite's
  // verdict catches a lost update.
  void set_lose_one_add_in_for_testing(uint32_t n) { lose_one_add_in_.store(n); }

  // Cluster mode: requests on keys go where `ownership` says; those of
  // partitions another instance owns are forwarded over `links`, and peers
  // log in as cluster::kClusterUser with `secret`. Set before Listen; both
  // outlive the handler's use.
  void set_cluster(const cluster::Ownership* ownership, cluster::PeerLinks* links,
                   std::string secret) {
    ownership_ = ownership;
    links_ = links;
    cluster_secret_ = std::move(secret);
  }

  void OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) override;
  void OnBinary(const std::shared_ptr<Connection>& conn) override;
  void OnClose(const std::shared_ptr<Connection>& conn) override;

  size_t sessions() const { return sessions_.load(std::memory_order_relaxed); }

 private:
  // One request being run, and whether on a store worker (where it may
  // wait for the store) or on an I/O thread (where it may not).
  struct Call {
    const std::shared_ptr<Connection>& conn;
    Request& r;
    bool on_worker;
  };
  using Method = Status (RequestHandler::*)(Call&);
  // Who may run an op.
  enum class Access { kAnyone, kSession, kReader, kWriter };
  struct OpRow {
    Op op;
    Access access;
    bool needs_store;  // always waits for the store: run on a store worker
    Method run;
  };
  static const OpRow& RowFor(Op op);

  // Decodes and runs one frame (OnText, and a request held for a retry).
  void Dispatch(const std::shared_ptr<Connection>& conn, std::string_view payload,
                int64_t first_try_ns);
  // Cluster mode (request_handler_cluster.cc): true when the request was
  // dealt with here (forwarded, held for a retry, or answered with an
  // error); false to run it on this instance.
  bool Route(const std::shared_ptr<Connection>& conn, const Request& r, std::string_view payload,
             int64_t first_try_ns);
  void Forward(const std::shared_ptr<Connection>& conn, const Request& r, std::string_view payload,
               uint32_t partition, uint64_t owner, int64_t first_try_ns);
  // Runs the request again shortly (a partition being handed over),
  // without reading the connection meanwhile; gives up with unavailable
  // after kRouteGiveUp from its first try.
  void Hold(const std::shared_ptr<Connection>& conn, uint64_t id, std::string_view payload,
            int64_t first_try_ns);
  // The login of a peer instance's link.
  Status ClusterLogin(Call& c);

  // Checks access and runs the request; returns an error to send instead.
  Status Execute(const std::shared_ptr<Connection>& conn, Request& r, bool on_worker);
  Status Check(const OpRow& row, const Connection& conn, const Request& r) const;
  // Hands the request to a store worker and holds the connection's reading
  // until it is answered.
  Status Offload(Call& call);

  Status Ping(Call& c);
  Status Echo(Call& c);
  Status Login(Call& c);
  Status Logout(Call& c);
  Status Get(Call& c);
  Status Set(Call& c);
  Status Delete(Call& c);
  Status Add(Call& c);
  Status Merge(Call& c);
  Status All(Call& c);
  Status Stats(Call& c);
  // The nearest documents of a table with a geo index; with `values`, each
  // with its document (read like get's, offloaded when one is evicted).
  Status Near(Call& c);
  // Sync ops (request_handler_sync.cc).
  Status Push(Call& c);
  Status Pull(Call& c);
  Status Bootstrap(Call& c);
  void ReadAhead(Connection& conn, const sync::Caller& caller, const sync::BootstrapReply& sent,
                 size_t limit);
  Status Wait(Call& c);
  // Cancels the held waits of a connection that closed.
  void CancelWaits(Connection& conn);
  // A document's write through Documents, acknowledged to the connection;
  // offloaded when the document is not in memory and this is an I/O thread.
  template <typename ChangeFn>
  Status WriteDocument(Call& c, WriteKind kind, ChangeFn&& change);

  const ServerOptions options_;
  const doc::Limits limits_;
  store::Store& store_;
  Documents& documents_;
  sync::SyncEngine& sync_;
  StoreWorkers& workers_;
  std::function<ListenerStats()> network_stats_;
  const cluster::Ownership* ownership_ = nullptr;
  cluster::PeerLinks* links_ = nullptr;
  std::string cluster_secret_;
  std::atomic<size_t> sessions_{0};
  // Bootstrap pages read ahead, across connections (bootstrap_read_ahead.h):
  // 64 MiB holds about 170 pages of 1,000 rows of ~200 bytes.
  const std::shared_ptr<ReadAheadBudget> read_ahead_budget_ =
      std::make_shared<ReadAheadBudget>(size_t{64} << 20);
  std::atomic<uint64_t> pages_read_ahead_{0};       // kept
  std::atomic<uint64_t> pages_from_read_ahead_{0};  // answered from a kept page
  std::atomic<uint64_t> read_ahead_refused_{0};     // not read: no room in the budget
  std::atomic<uint32_t> lose_one_add_in_{0};
  std::atomic<uint64_t> adds_seen_{0};
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_
