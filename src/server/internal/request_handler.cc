#include "server/internal/request_handler.h"

#include <charconv>
#include <exception>
#include <utility>

#include "doc/merge.h"
#include "doc/path.h"
#include "server/internal/request_scanner.h"
#include "server/users.h"

namespace skiff::server::internal {
namespace {

doc::Limits RequestLimits(const ServerOptions& options) {
  doc::Limits limits;
  limits.max_depth = options.max_depth;
  limits.max_document_bytes = options.max_frame_bytes;
  return limits;
}

std::string JsonString(std::string_view s) {
  return doc::Value(std::string(s)).dump(-1, ' ', false, doc::Value::error_handler_t::replace);
}

// A per-thread buffer for building replies of the common ops, handed to
// Connection::SendCopy: those replies then cost no allocation of their own.
// Emptied on every call; the caller uses it before the next request.
std::string& ReplyBuffer() {
  thread_local std::string buffer;
  if (buffer.capacity() > (size_t{1} << 20)) std::string().swap(buffer);  // after a huge reply
  buffer.clear();
  return buffer;
}

// A number as JSON text: integers without the serializer's machinery.
std::string NumberText(const doc::Value& n) {
  char buf[24];
  std::to_chars_result end{buf, std::errc()};
  if (n.is_number_unsigned()) {
    end = std::to_chars(buf, buf + sizeof buf, n.get<uint64_t>());
  } else if (n.is_number_integer()) {
    end = std::to_chars(buf, buf + sizeof buf, n.get<int64_t>());
  } else {
    return n.dump();
  }
  return std::string(buf, end.ptr);
}

}  // namespace

RequestHandler::RequestHandler(const ServerOptions& options, store::Store& store,
                               DocumentCache& cache, Committer& committer, sync::SyncEngine& sync)
    : options_(options),
      limits_(RequestLimits(options)),
      store_(store),
      cache_(cache),
      committer_(committer),
      sync_(sync) {}

void RequestHandler::OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) {
  if (payload.size() > options_.max_frame_bytes) {
    conn->Send(EncodeError(std::nullopt, TooLarge("frame of " + std::to_string(payload.size()) +
                                                  " bytes is over the limit of " +
                                                  std::to_string(options_.max_frame_bytes))));
    conn->Close(kCloseTooBig, "frame too large");
    return;
  }
  // The scanner takes the common requests without building a tree; the
  // full decoder takes the rest and words every error.
  Request request;
  std::optional<uint64_t> id;
  if (ScanRequest(payload, limits_, &request)) {
    id = request.id;
  } else {
    Result<Request> decoded = DecodeRequest(payload, limits_, &id);
    if (!decoded.ok()) {
      conn->Send(EncodeError(id, decoded.status()));
      return;
    }
    request = std::move(*decoded);
  }
  Status status;
  try {
    status = Execute(conn, request);
  } catch (const std::exception& e) {
    // Nothing below should throw; if a library does, the request fails and
    // the connection and the server carry on.
    status = Internal(std::string("unexpected error: ") + e.what());
  }
  if (!status.ok()) conn->Send(EncodeError(id, status));
}

void RequestHandler::OnBinary(const std::shared_ptr<Connection>& conn) {
  conn->Send(EncodeError(std::nullopt, BadRequest("binary frames are not part of the protocol; "
                                                  "send each request as a text frame")));
}

void RequestHandler::OnClose(const std::shared_ptr<Connection>& conn) {
  CancelWaits(*conn);
  if (conn->user) {
    conn->user.reset();
    sessions_.fetch_sub(1, std::memory_order_relaxed);
  }
}

Status RequestHandler::Execute(const std::shared_ptr<Connection>& conn, Request& r) {
  if (!conn->user && !AllowedBeforeLogin(r.op)) {
    return Unauthorized("op '" + std::string(OpName(r.op)) + "' needs a logged-in connection");
  }
  auto need = [&](bool write) -> Status {
    bool allowed = write ? conn->permissions.CanWrite(r.table) : conn->permissions.CanRead(r.table);
    if (allowed) return Status::Ok();
    return Forbidden("user '" + *conn->user + "' may not " + (write ? "write" : "read") +
                     " table '" + r.table + "'");
  };
  switch (r.op) {
    case Op::kLogin:
      return Login(*conn, r);
    case Op::kLogout:
      return Logout(*conn, r);
    case Op::kPing: {
      std::string& reply = ReplyBuffer();
      AppendOkRaw(reply, r.id, "", "");
      conn->SendCopy(reply);
      return Status::Ok();
    }
    case Op::kEcho:
      if (r.raw_value.empty()) {
        conn->Send(EncodeOkRaw(r.id, "data", r.value.dump()));
      } else {
        std::string& reply = ReplyBuffer();
        AppendOkRaw(reply, r.id, "data", r.raw_value);
        conn->SendCopy(reply);
      }
      return Status::Ok();
    case Op::kGet:
    case Op::kHas:
      SKIFF_RETURN_IF_ERROR(need(false));
      return Get(*conn, r);
    case Op::kAll:
      SKIFF_RETURN_IF_ERROR(need(false));
      return All(*conn, r);
    case Op::kSet:
      SKIFF_RETURN_IF_ERROR(need(true));
      return Set(conn, r);
    case Op::kDelete:
      SKIFF_RETURN_IF_ERROR(need(true));
      return Delete(conn, r);
    case Op::kAdd:
      SKIFF_RETURN_IF_ERROR(need(true));
      return Add(conn, r);
    case Op::kMerge:
      SKIFF_RETURN_IF_ERROR(need(true));
      return Merge(conn, r);
    case Op::kStats:
      return Stats(*conn, r);
    // Any logged-in user may sync; the engine limits them to their groups.
    case Op::kPush:
      return Push(conn, r);
    case Op::kPull:
      return Pull(*conn, r);
    case Op::kBootstrap:
      return Bootstrap(*conn, r);
    case Op::kWait:
      return Wait(conn, r);
  }
  return Internal("unhandled op");
}

Status RequestHandler::Login(Connection& conn, const Request& r) {
  if (conn.user) {
    return BadRequest("this connection is already logged in as '" + *conn.user +
                      "'; log out first");
  }
  Result<Account> account = AuthenticateAccount(store_, r.user, r.secret);
  if (!account.ok()) return account.status();
  conn.user = r.user;
  conn.permissions = std::move(account->permissions);
  conn.groups = std::make_shared<const std::vector<std::string>>(std::move(account->groups));
  sessions_.fetch_add(1, std::memory_order_relaxed);
  conn.Send(EncodeOk(r.id));
  return Status::Ok();
}

Status RequestHandler::Logout(Connection& conn, const Request& r) {
  conn.user.reset();
  conn.permissions = Permissions();
  conn.groups.reset();
  sessions_.fetch_sub(1, std::memory_order_relaxed);
  conn.Send(EncodeOk(r.id));
  return Status::Ok();
}

Status RequestHandler::Get(Connection& conn, const Request& r) {
  std::string& reply = ReplyBuffer();
  SKIFF_RETURN_IF_ERROR(cache_.With(r.table, r.key, [&](CachedDocument& d) {
    if (r.op == Op::kGet && d.exists) {
      AppendOkRaw(reply, r.id, "found", "true");
      reply.pop_back();  // reopen the object to append the value
      reply += ",\"value\":";
      if (d.text.empty()) {
        reply += d.value.dump();
      } else {
        reply += d.text;
      }
      reply += '}';
    } else {
      AppendOkRaw(reply, r.id, "found", d.exists ? "true" : "false");
    }
  }));
  conn.SendCopy(reply);
  return Status::Ok();
}

void RequestHandler::Persist(const std::shared_ptr<Connection>& conn, const Request& r,
                             CachedDocument& doc, std::optional<std::string> value,
                             const std::string& reply, bool coalesce) {
  // The write's number keeps the entry in memory until the store has it.
  if (options_.durability == Durability::kMemory) {
    // Acknowledged already, and a failed flush is retried until it lands.
    // While a WriteLatest write of the key is still queued it will read
    // this change too (we hold the key's shard lock, which its read takes).
    if (doc.latest_write > committer_.taken()) return;
    if (coalesce) {
      doc.last_write = doc.latest_write = committer_.WriteLatest(r.table, r.key);
    } else {
      doc.last_write = committer_.Write(r.table, r.key, std::move(value), nullptr);
    }
    return;
  }
  conn->in_flight.fetch_add(1, std::memory_order_relaxed);
  doc.last_write =
      committer_.Write(r.table, r.key, std::move(value),
                       [this, conn, table = r.table, key = r.key, id = r.id, reply](
                           const Status& status, uint64_t seq) mutable {
                         if (!status.ok()) cache_.WriteFailed(table, key, seq);
                         // Before the send: the listener reads the connection
                         // again once its replies go out and it is under the
                         // in-flight limit.
                         conn->in_flight.fetch_sub(1, std::memory_order_relaxed);
                         conn->Send(status.ok() ? std::move(reply) : EncodeError(id, status));
                       });
}

std::optional<std::string> RequestHandler::TextToPersist(const CachedDocument& doc) const {
  if (options_.durability == Durability::kMemory) return std::nullopt;
  return doc.value.dump();
}

void RequestHandler::ReplyAfterWrite(Connection& conn, std::string_view reply) {
  if (options_.durability == Durability::kMemory) conn.SendCopy(reply);
}

Status RequestHandler::Set(const std::shared_ptr<Connection>& conn, Request& r) {
  // Outside the shard lock. A scanned request keeps the document as text;
  // one the full decoder read arrives as a tree.
  const bool as_text = !r.raw_value.empty();
  std::string text = as_text ? CompactJson(r.raw_value) : r.value.dump();
  std::string& reply = ReplyBuffer();
  AppendOkRaw(reply, r.id, "", "");
  cache_.Replace(r.table, r.key, [&](CachedDocument& d) {
    bool was = d.exists;
    size_t old_bytes = d.bytes;
    d.exists = true;
    d.bytes = text.size();
    if (as_text) {
      d.value = doc::Value();
      d.text = text;  // the committer takes the other copy
    } else {
      d.value = std::move(r.value);
      d.text.clear();
    }
    cache_.Changed(was, old_bytes, d);
    Persist(conn, r, d, std::move(text), reply);
  });
  ReplyAfterWrite(*conn, reply);
  return Status::Ok();
}

Status RequestHandler::Delete(const std::shared_ptr<Connection>& conn, const Request& r) {
  bool found = false;
  std::string reply_found = EncodeOkRaw(r.id, "found", "true");
  SKIFF_RETURN_IF_ERROR(cache_.With(r.table, r.key, [&](CachedDocument& d) {
    found = d.exists;
    if (!found) return;
    size_t old_bytes = d.bytes;
    d.exists = false;
    d.value = doc::Value();
    d.text.clear();
    d.bytes = 0;
    cache_.Changed(true, old_bytes, d);
    Persist(conn, r, d, std::nullopt, reply_found);
  }));
  if (!found) {
    conn->Send(EncodeOkRaw(r.id, "found", "false"));
  } else {
    ReplyAfterWrite(*conn, reply_found);
  }
  return Status::Ok();
}

Status RequestHandler::Add(const std::shared_ptr<Connection>& conn, const Request& r) {
  // Test only (ServerOptions::drop_one_add_in): acknowledge without applying.
  if (const uint32_t n = options_.drop_one_add_in;
      n > 0 && adds_seen_.fetch_add(1, std::memory_order_relaxed) % n == n - 1) {
    conn->Send(EncodeOkRaw(r.id, "value", r.value.dump()));
    return Status::Ok();
  }
  Status result;
  std::string& reply = ReplyBuffer();
  SKIFF_RETURN_IF_ERROR(cache_.With(r.table, r.key, [&](CachedDocument& d) {
    // AddAtPath leaves the document unchanged on error, so work in place:
    // copying a large document for every add would dominate its cost.
    if (!d.exists) d.value = doc::Value();
    result = DocumentCache::Parse(d);
    if (!result.ok()) return;
    Result<doc::Value> sum = doc::AddAtPath(d.value, r.path, r.value);
    if (!sum.ok()) {
      result = sum.status();
      return;
    }
    std::optional<std::string> text = TextToPersist(d);
    bool was = d.exists;
    size_t old_bytes = d.bytes;
    d.exists = true;
    if (text) d.bytes = text->size();
    cache_.Changed(was, old_bytes, d);
    AppendOkRaw(reply, r.id, "value", NumberText(*sum));
    Persist(conn, r, d, std::move(text), reply, /*coalesce=*/true);
  }));
  SKIFF_RETURN_IF_ERROR(result);
  ReplyAfterWrite(*conn, reply);
  return Status::Ok();
}

Status RequestHandler::Merge(const std::shared_ptr<Connection>& conn, const Request& r) {
  Status result;
  std::string& reply = ReplyBuffer();
  AppendOkRaw(reply, r.id, "", "");
  SKIFF_RETURN_IF_ERROR(cache_.With(r.table, r.key, [&](CachedDocument& d) {
    if (!d.exists) d.value = doc::Value();
    result = DocumentCache::Parse(d);
    if (!result.ok()) return;
    result = doc::MergePatch(d.value, r.value, limits_.max_depth);
    if (!result.ok()) return;
    std::optional<std::string> text = TextToPersist(d);
    bool was = d.exists;
    size_t old_bytes = d.bytes;
    d.exists = true;
    if (text) d.bytes = text->size();
    cache_.Changed(was, old_bytes, d);
    Persist(conn, r, d, std::move(text), reply, /*coalesce=*/true);
  }));
  SKIFF_RETURN_IF_ERROR(result);
  ReplyAfterWrite(*conn, reply);
  return Status::Ok();
}

Status RequestHandler::All(Connection& conn, const Request& r) {
  // The store is the source for scans; first make it hold every write
  // already applied in memory.
  SKIFF_RETURN_IF_ERROR(committer_.Flush());
  Result<store::ScanPage> page = store_.Scan(r.table, r.after, r.limit);
  if (!page.ok()) return page.status();
  std::string reply = EncodeOkRaw(r.id, "items", "[");
  reply.pop_back();  // reopen the object after the '['
  for (size_t i = 0; i < page->items.size(); ++i) {
    const store::KeyValue& item = page->items[i];
    if (i > 0) reply += ',';
    reply += "{\"key\":";
    reply += JsonString(item.key);
    reply += ",\"value\":";
    reply += item.value;
    reply += '}';
  }
  reply += "],\"next\":";
  reply += page->next ? JsonString(*page->next) : "null";
  reply += '}';
  conn.Send(std::move(reply));
  return Status::Ok();
}

Status RequestHandler::Stats(Connection& conn, const Request& r) {
  TierStats tiers = cache_.stats();
  CommitterCounters commits = committer_.counters();
  sync::SyncCounters sync = sync_.counters();
  const ListenerStats network = network_stats_ ? network_stats_() : ListenerStats();
  doc::Value fields = {
      {"tiers",
       {{"hot", {{"documents", tiers.hot.documents}, {"bytes", tiers.hot.bytes}}},
        {"packed", {{"documents", tiers.packed.documents}, {"bytes", tiers.packed.bytes}}},
        {"evicted", {{"documents", tiers.evictions}}}}},
      {"connections", network.connections},
      {"network",
       {{"accepted", network.accepted},
        {"refused", network.refused},
        {"max_connections", network.max_connections},
        {"descriptor_exhaustion", network.descriptor_exhaustion},
        {"handshake_failures", network.handshake_failures},
        {"protocol_errors", network.protocol_errors},
        {"frame_timeouts", network.frame_timeouts},
        {"send_timeouts", network.send_timeouts},
        {"idle_closes", network.idle_closes},
        {"paused", network.paused},
        {"health_checks", network.health_checks},
        {"buffered_input_bytes", network.buffered_input_bytes},
        {"buffered_output_bytes", network.buffered_output_bytes},
        {"max_buffered_bytes", network.max_buffered_bytes}}},
      {"sessions", sessions()},
      {"durability", std::string(DurabilityName(options_.durability))},
      {"store", std::string(store_.kind())},
      {"transactions", commits.transactions},
      {"writes", commits.writes},
      // Statements the store ran since start: lets a benchmark count a
      // server in another process (skiffd) the way it counts one in-process.
      {"store_statements", store_.counters().statements},
      {"sync",
       {{"cursor", sync_.cursor()},
        {"pushes", sync.pushes},
        {"waits_held", sync.waits_held},
        {"waits_woken", sync.waits_woken},
        {"waits_expired", sync.waits_expired}}},
  };
  conn.Send(EncodeOk(r.id, fields));
  return Status::Ok();
}

}  // namespace skiff::server::internal
