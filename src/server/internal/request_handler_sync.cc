// The sync ops of RequestHandler: push, pull, bootstrap and wait, handed to
// the SyncEngine with the session's user and groups as the Caller.
#include <chrono>
#include <optional>
#include <utility>

#include "server/internal/request_handler.h"
#include "server/internal/wire/replies.h"
#include "server/internal/wire/sync_replies.h"

namespace skiff::server::internal {
namespace {

// A client holding more waits than this on one connection is misbehaving
// (a device needs one); more get overloaded instead of costing memory.
constexpr size_t kMaxHeldWaitsPerConnection = 16;

sync::Caller CallerOf(const Connection& conn) { return sync::Caller{*conn.user, conn.groups}; }

}  // namespace

Status RequestHandler::Push(Call& c) {
  const std::shared_ptr<Connection>& conn = c.conn;
  Request& r = c.r;
  conn->read_ahead.Drop();  // a page read ahead may lack this push's rows
  conn->in_flight.fetch_add(1, std::memory_order_relaxed);
  // The reply goes out from the engine's committer thread once the push's
  // transaction committed; Send is thread-safe and only queues the frame.
  sync_.Push(CallerOf(*conn), std::move(r.push), [conn, id = r.id](Result<sync::PushReply> reply) {
    conn->in_flight.fetch_sub(1, std::memory_order_relaxed);  // before the send (see Persist)
    conn->Send(reply.ok() ? EncodePushReply(id, *reply) : EncodeError(id, reply.status()));
  });
  return Status::Ok();
}

Status RequestHandler::Pull(Call& c) {
  SKIFF_ASSIGN_OR_RETURN(sync::PullReply reply,
                         sync_.Pull(CallerOf(*c.conn), c.r.since, c.r.limit));
  c.conn->Send(EncodePullReply(c.r.id, reply));
  return Status::Ok();
}

Status RequestHandler::Bootstrap(Call& c) {
  Connection& conn = *c.conn;
  const sync::Caller caller = CallerOf(conn);
  std::optional<sync::BootstrapReply> reply =
      conn.read_ahead.Take(c.r.sync_after, c.r.limit, conn.groups);
  if (reply) {
    pages_from_read_ahead_.fetch_add(1, std::memory_order_relaxed);
  } else {
    SKIFF_ASSIGN_OR_RETURN(reply, sync_.Bootstrap(caller, c.r.sync_after, c.r.limit));
  }
  conn.Send(EncodeBootstrapReply(c.r.id, *reply));
  if (reply->next && conn.read_ahead.enabled()) ReadAhead(conn, caller, *reply, c.r.limit);
  return Status::Ok();
}

// The page after `sent`, read while `sent` travels and the client's request
// for the next comes back (bootstrap_read_ahead.h). The connection is not
// read meanwhile, so that request waits for this read instead of making
// its own.
void RequestHandler::ReadAhead(Connection& conn, const sync::Caller& caller,
                               const sync::BootstrapReply& sent, size_t limit) {
  std::optional<BudgetRoom> room = BootstrapReadAhead::Reserve(read_ahead_budget_, sent);
  if (!room) {
    read_ahead_refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    Result<sync::BootstrapReply> ahead = sync_.Bootstrap(caller, *sent.next, limit);
    // A failed read is the next request's to meet: it reads the page again.
    if (ahead.ok() &&
        conn.read_ahead.Keep(std::move(*room), *sent.next, limit, conn.groups, std::move(*ahead))) {
      pages_read_ahead_.fetch_add(1, std::memory_order_relaxed);
    }
  } catch (const std::exception&) {
    // The request was answered already; the next one reads the page itself.
  }
}

Status RequestHandler::Wait(Call& c) {
  const std::shared_ptr<Connection>& conn = c.conn;
  const Request& r = c.r;
  const uint64_t token = conn->waits.Open(kMaxHeldWaitsPerConnection);
  if (token == 0) {
    return Status(
        StatusCode::kOverloaded,
        "a connection may hold at most " + std::to_string(kMaxHeldWaitsPerConnection) + " waits");
  }
  // Weak: a held wait must not keep a closed connection's memory alive; its
  // close cancels the wait anyway.
  std::weak_ptr<Connection> weak = conn;
  auto done = [weak, token, id = r.id](Result<sync::WaitReply> reply) {
    std::shared_ptr<Connection> waiting = weak.lock();
    if (!waiting || !waiting->waits.Answer(token)) return;
    // The engine answers from its committer or expiry thread, often many
    // waits at once; Send only queues the frame, and the connection's own
    // I/O thread writes it.
    waiting->Send(reply.ok() ? EncodeWaitReply(id, *reply) : EncodeError(id, reply.status()));
  };
  const uint64_t timeout = std::min<uint64_t>(r.timeout_ms, uint64_t{1} << 40);
  sync::SyncEngine::WaitId wait_id =
      sync_.Wait(CallerOf(*conn), r.since, std::chrono::milliseconds(static_cast<int64_t>(timeout)),
                 std::move(done));
  if (wait_id != 0) conn->waits.Bind(token, wait_id);
  return Status::Ok();
}

void RequestHandler::CancelWaits(Connection& conn) {
  for (uint64_t id : conn.waits.Close()) sync_.CancelWait(id);
}

}  // namespace skiff::server::internal
