// Router: cluster mode's handler, wrapped around the request handler
// (docs/cluster.md, "Routing"). The request handler and the connections
// know nothing of the cluster: a request on a key whose partition this
// instance serves, and every other request, goes on to the handler; one
// whose partition another instance owns is relayed to it over a peer link;
// one whose partition has no owner right now is held and routed again.
// The router also takes the peer links' login and keeps, per connection,
// what it relayed and where, so that a client's requests on a partition
// that moves still take effect in the order they were sent. A `near` goes
// to every owner, each answering for its partitions (near_gather.h).
//
// Thread-safe, like any ListenerHandler: calls for one connection are
// serial, on that connection's I/O thread, and so is everything the router
// does with that connection's state (replies of peer links are posted
// back to it).
#ifndef SKIFF_SERVER_CLUSTER_ROUTER_H_
#define SKIFF_SERVER_CLUSTER_ROUTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.h"
#include "base/mutex.h"
#include "server/cluster/ownership.h"
#include "server/cluster/peer_links.h"
#include "server/internal/listener.h"
#include "server/internal/request_handler.h"
#include "server/internal/wire/stats_reply.h"

namespace skiff::server::cluster {

class Router final : public internal::ListenerHandler {
 public:
  // Peers log in as kClusterUser with `secret`. Every argument outlives
  // the router.
  Router(internal::RequestHandler& handler, const Ownership& ownership, PeerLinks& links,
         std::string secret, const Clock& clock);

  void OnText(const std::shared_ptr<internal::Connection>& conn, std::string_view payload) override;
  void OnBinary(const std::shared_ptr<internal::Connection>& conn) override;
  void OnClose(const std::shared_ptr<internal::Connection>& conn) override;
  std::optional<std::string> MetricsPage() override { return handler_.MetricsPage(); }

  // The cluster's figures of `stats`: this instance and what it serves.
  void AddStats(internal::StatsFigures& figures) const;

 private:
  // Requests relayed to one instance and not yet answered.
  struct Relayed {
    uint64_t to = 0;
    size_t count = 0;
  };
  // What the router keeps of one connection (on its I/O thread).
  struct ConnState {
    bool peer = false;                              // a peer instance's link: never relayed again
    std::unordered_map<uint32_t, Relayed> relayed;  // by partition
  };

  // Routes one frame; `first_try_ns` is when it was first routed (0: now).
  void Dispatch(const std::shared_ptr<internal::Connection>& conn, std::string_view payload,
                int64_t first_try_ns);
  void PeerLogin(const std::shared_ptr<internal::Connection>& conn, const internal::Request& r);
  // Runs the request on this instance; routes it again if the partition
  // stopped being served here meanwhile (a peer is told `moved`). With
  // `granted`, the request's access was checked while it was routed, and
  // is not checked again; without, the handler checks it.
  void RunHere(const std::shared_ptr<internal::Connection>& conn, internal::Request& r,
               std::string_view payload, bool peer, int64_t first_try_ns,
               std::optional<internal::RequestHandler::Granted> granted = std::nullopt);
  void Relay(const std::shared_ptr<internal::Connection>& conn, const internal::Request& r,
             std::string_view payload, uint32_t partition, uint64_t owner, int64_t first_try_ns);
  // A client's near: asked of every owner, answers merged. The connection
  // is not read meanwhile, so the query sees its earlier writes and none
  // of its later ones.
  void Near(const std::shared_ptr<internal::Connection>& conn, internal::Request& r,
            std::string_view payload, int64_t first_try_ns,
            internal::RequestHandler::Granted granted);
  // A peer's near: answered for the partitions it names, or `moved` when
  // this instance does not serve all of them.
  void NearShare(const std::shared_ptr<internal::Connection>& conn, internal::Request& r,
                 std::string_view payload, internal::RequestHandler::Granted granted);
  // Routes the request again shortly (a partition being handed over),
  // without reading the connection meanwhile; gives up with unavailable
  // after kRouteGiveUp from its first try. `rerouting`: the partition of a
  // relayed request that came back, whose place in that partition's count
  // is given up only when it is routed again.
  void Hold(const std::shared_ptr<internal::Connection>& conn, uint64_t id,
            std::string_view payload, int64_t first_try_ns,
            std::optional<uint32_t> rerouting = std::nullopt);
  // A relayed request of `conn` on `partition` was answered (its I/O thread).
  void Settle(const internal::Connection& conn, uint32_t partition);

  // The state of `conn`, made on first use; stable until OnClose.
  ConnState& StateOf(const internal::Connection& conn);
  ConnState* FindState(const internal::Connection& conn);

  internal::RequestHandler& handler_;
  const Ownership& ownership_;
  PeerLinks& links_;
  const std::string secret_;
  const Clock& clock_;                // when a held request gives up
  std::atomic<uint64_t> relayed_{0};  // requests sent to another instance, retries included
  // Node-based, so a connection's state stays put while others come and go.
  Mutex mu_;
  std::unordered_map<const internal::Connection*, ConnState> states_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_ROUTER_H_
