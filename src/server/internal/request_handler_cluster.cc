// Cluster mode's routing of requests on keys (docs/cluster.md): run here
// when this instance serves the key's partition, forwarded to its owner
// otherwise, held for a moment while the partition has no owner.
#include <chrono>
#include <string>
#include <utility>

#include <sodium.h>

#include "client/client.h"
#include "server/cluster/partition.h"
#include "server/internal/request_handler.h"

namespace skiff::server::internal {
namespace {

// How long a request waits for its partition to have an owner (a hand-over
// takes one lease tick) before it gets unavailable, and how often it looks.
constexpr std::chrono::milliseconds kRouteGiveUp{5000};
constexpr std::chrono::milliseconds kRouteRetry{20};

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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

// The owner's reply under the client's id, in the server's member order (id,
// ok, then the op's fields: found before value, which the parsed reply's
// sorted members keep), so a client that reads replies by position sees the
// same frame as from the owner itself.
std::string ForwardedReply(uint64_t id, const doc::Value& reply, bool strip) {
  std::string out = "{\"id\":" + std::to_string(id) + ",\"ok\":true";
  for (const auto& [name, value] : reply.items()) {
    if (name == "id" || name == "ok") continue;
    if (strip && (name == "value" || name == "found")) continue;
    out += ",\"" + name + "\":" + doc::Dump(value);
  }
  out += '}';
  return out;
}

}  // namespace

Status RequestHandler::ClusterLogin(Call& c) {
  if (ownership_ == nullptr || cluster_secret_.empty() ||
      c.r.secret.size() != cluster_secret_.size() ||
      sodium_memcmp(c.r.secret.data(), cluster_secret_.data(), cluster_secret_.size()) != 0) {
    return Unauthorized("unknown user or wrong secret");
  }
  c.conn->Post([this, conn = c.conn, id = c.r.id] {
    conn->user = cluster::kClusterUser;
    conn->permissions = Permissions({"*"}, {"*"});
    conn->cluster_peer = true;
    sessions_.fetch_add(1, std::memory_order_relaxed);
    conn->Send(EncodeOk(id));
  });
  return Status::Ok();
}

bool RequestHandler::Route(const std::shared_ptr<Connection>& conn, const Request& r,
                           std::string_view payload, int64_t first_try_ns) {
  if (!IsKeyOp(r.op)) return false;
  if (Status s = Check(RowFor(r.op), *conn, r); !s.ok()) {
    conn->Send(EncodeError(r.id, s));
    return true;
  }
  const uint32_t partition = cluster::PartitionOf(r.table, r.key);
  const cluster::Route route = ownership_->RouteOf(partition);
  if (conn->cluster_peer) {
    // Forwarded once already: never again, so two instances that disagree
    // for a moment cannot bounce a request between them.
    if (route.kind == cluster::Route::Kind::kLocal) return false;
    conn->Send(EncodeError(r.id, Moved("this instance does not serve the key's partition")));
    return true;
  }
  const uint64_t to = route.kind == cluster::Route::Kind::kLocal ? ownership_->id() : route.owner;
  auto earlier = conn->forwarded.find(partition);
  const bool behind = earlier != conn->forwarded.end() && earlier->second.to != to;
  if (route.kind == cluster::Route::Kind::kNone || behind) {
    Hold(conn, r.id, payload, first_try_ns);
    return true;
  }
  if (route.kind == cluster::Route::Kind::kLocal) return false;
  Forward(conn, r, payload, partition, route.owner, first_try_ns);
  return true;
}

void RequestHandler::Hold(const std::shared_ptr<Connection>& conn, uint64_t id,
                          std::string_view payload, int64_t first_try_ns) {
  const int64_t now = SteadyNs();
  if (first_try_ns == 0) first_try_ns = now;
  if (now - first_try_ns > std::chrono::nanoseconds(kRouteGiveUp).count()) {
    conn->Send(EncodeError(id, Unavailable("no instance of the cluster serves this key's "
                                           "partition right now; retry")));
    return;
  }
  conn->barrier.fetch_add(1, std::memory_order_acq_rel);
  links_->After(kRouteRetry, [this, conn, text = std::string(payload), first_try_ns] {
    conn->Post([this, conn, text, first_try_ns] {
      Dispatch(conn, text, first_try_ns);
      conn->ReleaseBarrier();
    });
  });
}

void RequestHandler::Forward(const std::shared_ptr<Connection>& conn, const Request& r,
                             std::string_view payload, uint32_t partition, uint64_t owner,
                             int64_t first_try_ns) {
  Result<doc::Value> request = doc::Parse(payload, limits_);
  if (!request.ok()) {
    conn->Send(EncodeError(r.id, request.status()));
    return;
  }
  request->erase("id");  // the link numbers its own requests
  Connection::Forwarded& f = conn->forwarded[partition];
  f.to = owner;
  ++f.count;
  conn->in_flight.fetch_add(1, std::memory_order_relaxed);
  // A write-only user gets add without value and delete without found,
  // as on the owner itself; the owner sees the link's user.
  const bool strip = !conn->permissions.CanRead(r.table);
  auto done = [this, conn, id = r.id, op = r.op, partition, strip, text = std::string(payload),
               first_try_ns](client::Reply reply) {
    conn->in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (!reply.ok() && reply.status().code() == StatusCode::kMoved) {
      // The owner changed under us: route it again shortly (our table
      // learns the new owner at its next tick; at once would only bounce),
      // ahead of this partition's later requests, which wait for it.
      conn->Post([this, conn, id, partition, text, first_try_ns] {
        auto it = conn->forwarded.find(partition);
        if (it != conn->forwarded.end() && --it->second.count == 0) conn->forwarded.erase(it);
        Hold(conn, id, text, first_try_ns);
      });
      return;
    }
    if (reply.ok()) {
      conn->Send(ForwardedReply(id, *reply, strip));
    } else if (client::IsTransportFailure(reply.status()) && IsWrite(op)) {
      conn->Send(EncodeError(id, OutcomeUnknown("the link to the instance that owns this key "
                                                "failed mid-request (" +
                                                reply.status().message() +
                                                "); the write may or may not have been applied")));
    } else {
      conn->Send(EncodeError(id, reply.status()));
    }
    conn->Post([conn, partition] {
      auto it = conn->forwarded.find(partition);
      if (it != conn->forwarded.end() && --it->second.count == 0) conn->forwarded.erase(it);
    });
  };
  if (!links_->Send(owner, *request, std::move(done))) {
    // No link to that peer yet (it just joined): like a hand-over.
    conn->in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (--f.count == 0) conn->forwarded.erase(partition);
    Hold(conn, r.id, payload, first_try_ns);
  }
}

}  // namespace skiff::server::internal
