#include "server/cluster/router.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include <sodium.h>

#include "server/cluster/near_gather.h"
#include "server/cluster/partition.h"
#include "server/cluster/relay_frame.h"
#include "server/internal/wire/near_reply.h"
#include "server/internal/wire/replies.h"
#include "server/permissions.h"

namespace skiff::server::cluster {
namespace {

using internal::Connection;
using internal::Op;
using internal::Request;

// How long a request waits for its partition to have an owner (a hand-over
// takes one lease tick) before it gets unavailable, and how often it looks.
constexpr std::chrono::milliseconds kRouteGiveUp{5000};
constexpr std::chrono::milliseconds kRouteRetry{20};
// Where a partition's relayed requests "went" while one of them waits to be
// routed again: no instance has this id (they count from 1).
constexpr uint64_t kRerouting = UINT64_MAX;

bool IsKeyOp(Op op) {
  switch (op) {
    case Op::kGet:
    case Op::kHas:
    case Op::kSet:
    case Op::kDelete:
    case Op::kAdd:
    case Op::kMerge:
      return true;
    default:
      return false;
  }
}

bool IsWrite(Op op) { return op != Op::kGet && op != Op::kHas; }

}  // namespace

Router::Router(internal::RequestHandler& handler, const Ownership& ownership, PeerLinks& links,
               std::string secret, const Clock& clock)
    : handler_(handler),
      ownership_(ownership),
      links_(links),
      secret_(std::move(secret)),
      clock_(clock) {}

void Router::OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) {
  Dispatch(conn, payload, 0);
}

void Router::OnBinary(const std::shared_ptr<Connection>& conn) { handler_.OnBinary(conn); }

void Router::OnClose(const std::shared_ptr<Connection>& conn) {
  handler_.OnClose(conn);
  MutexLock lock(&mu_);
  states_.erase(conn.get());
}

void Router::AddStats(internal::StatsFigures& figures) const {
  figures.cluster = internal::ClusterStats{ownership_.id(), ownership_.served(),
                                           relayed_.load(std::memory_order_relaxed)};
}

Router::ConnState& Router::StateOf(const Connection& conn) {
  MutexLock lock(&mu_);
  return states_[&conn];
}

Router::ConnState* Router::FindState(const Connection& conn) {
  MutexLock lock(&mu_);
  auto it = states_.find(&conn);
  return it == states_.end() ? nullptr : &it->second;
}

void Router::Dispatch(const std::shared_ptr<Connection>& conn, std::string_view payload,
                      int64_t first_try_ns) {
  Request r;
  if (!handler_.Decode(conn, payload, &r)) return;
  if (r.op == Op::kLogin && r.user == kClusterUser && !conn->user) return PeerLogin(conn, r);
  ConnState* state = FindState(*conn);
  const bool peer = state != nullptr && state->peer;
  if (r.op == Op::kNear) {
    Result<internal::RequestHandler::Granted> granted = handler_.CheckAccess(*conn, r);
    if (!granted.ok()) return conn->Send(internal::EncodeError(r.id, granted.status()));
    if (peer) return NearShare(conn, r, payload, *granted);
    return Near(conn, r, payload, first_try_ns, *granted);
  }
  if (!IsKeyOp(r.op)) return RunHere(conn, r, payload, peer, first_try_ns);
  // Access is checked where the request arrives, for the real user: the
  // owner sees only the link's. A request run here takes the verdict
  // along, so it is checked once.
  Result<internal::RequestHandler::Granted> granted = handler_.CheckAccess(*conn, r);
  if (!granted.ok()) return conn->Send(internal::EncodeError(r.id, granted.status()));
  const uint32_t partition = PartitionOf(r.table, r.key);
  const Route route = ownership_.RouteOf(partition);
  if (peer) {
    // Relayed once already: never again, so two instances that disagree
    // for a moment cannot bounce a request between them.
    if (route.kind == Route::Kind::kLocal) {
      return RunHere(conn, r, payload, true, first_try_ns, *granted);
    }
    return conn->Send(
        internal::EncodeError(r.id, Moved("this instance does not serve the key's partition")));
  }
  const uint64_t to = route.kind == Route::Kind::kLocal ? ownership_.id() : route.owner;
  bool behind = false;
  if (state != nullptr) {
    auto earlier = state->relayed.find(partition);
    behind = earlier != state->relayed.end() && earlier->second.to != to;
  }
  if (route.kind == Route::Kind::kNone || behind) return Hold(conn, r.id, payload, first_try_ns);
  if (route.kind == Route::Kind::kLocal) {
    return RunHere(conn, r, payload, false, first_try_ns, *granted);
  }
  Relay(conn, r, payload, partition, route.owner, first_try_ns);
}

void Router::PeerLogin(const std::shared_ptr<Connection>& conn, const Request& r) {
  if (secret_.empty() || r.secret.size() != secret_.size() ||
      sodium_memcmp(r.secret.data(), secret_.data(), secret_.size()) != 0) {
    return conn->Send(internal::EncodeError(r.id, Unauthorized("unknown user or wrong secret")));
  }
  // Access was checked for the real user by the instance the client is
  // connected to.
  handler_.OpenSession(*conn, kClusterUser, Permissions({"*"}, {"*"}));
  StateOf(*conn).peer = true;
  conn->Send(internal::EncodeOk(r.id));
}

void Router::RunHere(const std::shared_ptr<Connection>& conn, Request& r, std::string_view payload,
                     bool peer, int64_t first_try_ns,
                     std::optional<internal::RequestHandler::Granted> granted) {
  // A store worker cannot route again (the frame is gone there): it tells
  // a peer `moved`, which the peer routes again, and a client unavailable.
  const Status status = handler_.Run(conn, r, granted, /*send_moved=*/peer);
  if (status.code() != StatusCode::kMoved) return;
  // The partition stopped being served here between the routing and the
  // write's admission.
  if (peer) return conn->Send(internal::EncodeError(r.id, status));
  Hold(conn, r.id, payload, first_try_ns);
}

void Router::Near(const std::shared_ptr<Connection>& conn, Request& r, std::string_view payload,
                  int64_t first_try_ns, internal::RequestHandler::Granted granted) {
  // Who answers for what, as this instance sees it now.
  const auto shares = ownership_.Shares();
  if (!shares) return Hold(conn, r.id, payload, first_try_ns);
  if (shares->size() == 1 && shares->front().first == ownership_.id()) {
    // Every partition is served here: the index holds them all.
    const Status s = handler_.Run(conn, r, granted);
    if (!s.ok()) conn->Send(internal::EncodeError(r.id, s));
    return;
  }
  auto gather = std::make_shared<NearGather>(shares->size(), r.geo.limit, r.values);
  conn->in_flight.fetch_add(1, std::memory_order_relaxed);
  conn->barrier.fetch_add(1, std::memory_order_acq_rel);
  auto finish = [this, conn, gather, id = r.id, values = r.values, columns = r.columns,
                 text = std::string(payload), first_try_ns] {
    conn->in_flight.fetch_sub(1, std::memory_order_relaxed);
    switch (gather->verdict()) {
      case NearGather::Verdict::kAgain:
        // An owner changed under the query: all of it again, shortly.
        Hold(conn, id, text, first_try_ns);
        break;
      case NearGather::Verdict::kRefused: {
        std::optional<std::string> out = WithId(gather->refusal(), id);
        conn->Send(out ? std::move(*out)
                       : internal::EncodeError(id, Internal("unreadable reply from a peer")));
        break;
      }
      case NearGather::Verdict::kAnswered: {
        std::vector<geo::GeoHit> hits;
        internal::NearValues docs;
        gather->Merged(&hits, &docs);
        conn->Send(internal::EncodeNearReply(id, hits, values ? &docs : nullptr, columns));
        break;
      }
    }
    conn->ReleaseBarrier();
  };
  for (const auto& [owner, set] : *shares) {
    // This instance's own share goes over its link to itself, so that every
    // share is answered, and merged, alike.
    const std::optional<std::string> share = NearShareRequest(payload, set);
    PeerLinks::SendResult sent = PeerLinks::SendResult::kUnreadable;
    if (share) {
      sent =
          links_.Send(owner, *share,
                      [conn, gather, finish](PeerLinks::Outcome outcome, std::string_view reply) {
                        if (gather->Add(outcome, reply)) conn->Post(finish);
                      });
    }
    if (sent != PeerLinks::SendResult::kSent && gather->Add(PeerLinks::Outcome::kNotSent, {})) {
      conn->Post(finish);
    }
  }
}

void Router::NearShare(const std::shared_ptr<Connection>& conn, Request& r,
                       std::string_view payload, internal::RequestHandler::Granted granted) {
  const std::string_view named = MemberText(payload, "partitions");
  std::optional<PartitionSet> set;
  if (named.size() >= 2 && named.front() == '"' && named.back() == '"') {
    set = ParsePartitionSet(named.substr(1, named.size() - 2));
  }
  if (!set) {
    return conn->Send(internal::EncodeError(
        r.id, BadRequest("a peer's near names the partitions it asks for, in hex")));
  }
  if (!ownership_.ServesAll(*set)) {
    return conn->Send(internal::EncodeError(
        r.id, Moved("this instance does not serve every partition the near names")));
  }
  const geo::KeyFilter keep = [&](std::string_view key) {
    return (*set)[PartitionOf(r.table, key)];
  };
  r.near_keys = &keep;
  const Status s = handler_.Run(conn, r, granted, /*send_moved=*/true);
  if (!s.ok()) conn->Send(internal::EncodeError(r.id, s));
}

void Router::Hold(const std::shared_ptr<Connection>& conn, uint64_t id, std::string_view payload,
                  int64_t first_try_ns, std::optional<uint32_t> rerouting) {
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now().time_since_epoch()).count();
  if (first_try_ns == 0) first_try_ns = now;
  if (now - first_try_ns > std::chrono::nanoseconds(kRouteGiveUp).count()) {
    if (rerouting) Settle(*conn, *rerouting);
    conn->Send(internal::EncodeError(id, Unavailable("no instance of the cluster serves this "
                                                     "key's partition right now; retry")));
    return;
  }
  conn->barrier.fetch_add(1, std::memory_order_acq_rel);
  conn->PostAfter(kRouteRetry, [this, conn, text = std::string(payload), first_try_ns, rerouting] {
    // Its place among the partition's requests ends only now.
    if (rerouting) Settle(*conn, *rerouting);
    Dispatch(conn, text, first_try_ns);
    conn->ReleaseBarrier();
  });
}

void Router::Settle(const Connection& conn, uint32_t partition) {
  ConnState* state = FindState(conn);
  if (state == nullptr) return;  // closed meanwhile
  auto it = state->relayed.find(partition);
  if (it != state->relayed.end() && --it->second.count == 0) state->relayed.erase(it);
}

void Router::Relay(const std::shared_ptr<Connection>& conn, const Request& r,
                   std::string_view payload, uint32_t partition, uint64_t owner,
                   int64_t first_try_ns) {
  relayed_.fetch_add(1, std::memory_order_relaxed);
  // A write-only user gets add without value and delete without found, as
  // on the owner itself; the owner sees the link's user.
  const bool strip = !conn->permissions.CanRead(r.table);
  auto done = [this, conn, id = r.id, write = IsWrite(r.op), partition, strip,
               text = std::string(payload),
               first_try_ns](PeerLinks::Outcome outcome, std::string_view reply) {
    conn->in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (outcome == PeerLinks::Outcome::kNotSent ||
        (outcome == PeerLinks::Outcome::kReplied && IsMovedReply(reply))) {
      // The owner changed under us (or the link closed before the request
      // left): route it again shortly (our table learns the new owner at
      // its next tick; at once would only bounce), ahead of this
      // partition's later requests. It keeps its place in the partition's
      // count until then, under an instance no route names, so that later
      // requests, which the connection may still read meanwhile, wait for
      // it.
      conn->Post([this, conn, id, partition, text, first_try_ns] {
        if (ConnState* state = FindState(*conn)) {
          auto it = state->relayed.find(partition);
          if (it != state->relayed.end()) it->second.to = kRerouting;
        }
        Hold(conn, id, text, first_try_ns, partition);
      });
      return;
    }
    if (outcome == PeerLinks::Outcome::kReplied) {
      std::optional<std::string> out =
          strip ? WithId(reply, id, {"value", "found"}) : WithId(reply, id);
      conn->Send(out ? std::move(*out)
                     : internal::EncodeError(id, Internal("unreadable reply from the owner")));
    } else if (write) {
      conn->Send(internal::EncodeError(
          id, OutcomeUnknown("the link to the instance that owns this key failed mid-request; "
                             "the write may or may not have been applied")));
    } else {
      conn->Send(internal::EncodeError(
          id, Unavailable("the link to the instance that owns this key failed; retry")));
    }
    conn->Post([this, conn, partition] { Settle(*conn, partition); });
  };
  ConnState& state = StateOf(*conn);
  conn->in_flight.fetch_add(1, std::memory_order_relaxed);
  Relayed& f = state.relayed[partition];
  f.to = owner;
  ++f.count;
  const PeerLinks::SendResult sent = links_.Send(owner, payload, std::move(done));
  if (sent == PeerLinks::SendResult::kSent) return;
  conn->in_flight.fetch_sub(1, std::memory_order_relaxed);
  if (--f.count == 0) state.relayed.erase(partition);
  if (sent == PeerLinks::SendResult::kUnreadable) {
    return conn->Send(internal::EncodeError(r.id, BadRequest("the request is not a JSON object")));
  }
  // No link to that peer yet (it just joined): like a hand-over.
  Hold(conn, r.id, payload, first_try_ns);
}

}  // namespace skiff::server::cluster
