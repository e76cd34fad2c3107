#include "server/internal/request_handler.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <exception>
#include <utility>

#include "doc/merge.h"
#include "doc/path.h"
#include "server/internal/distance_text.h"
#include "server/internal/reply_writer.h"
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

// Appends `s` as a JSON string. Keys are nearly always plain printable
// ASCII, which needs no escaping and is copied as is: a near reply writes
// hundreds of keys, and building a doc::Value and its serializer for each
// was a quarter of the op's CPU. Anything else takes the serializer's path,
// which escapes and replaces invalid UTF-8.
bool IsPlainJsonChar(char ch) {
  const auto b = static_cast<unsigned char>(ch);
  return b >= 0x20 && b < 0x7f && b != '"' && b != '\\';
}

bool IsPlainJsonString(std::string_view s) {
  return std::all_of(s.begin(), s.end(), IsPlainJsonChar);
}

void AppendJsonString(std::string& out, std::string_view s) {
  if (!IsPlainJsonString(s)) {
    out += doc::Value(std::string(s)).dump(-1, ' ', false, doc::Value::error_handler_t::replace);
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

// Appends a near item's key and distance, `{"key":K,"dist_m":D` (the caller
// closes it), after a comma unless it is the first.
void AppendNearItemHead(std::string& out, const GeoHit& hit, bool first) {
  out += first ? "{\"key\":" : ",{\"key\":";
  AppendJsonString(out, hit.key);
  out += ",\"dist_m\":";
  char digits[kDistanceChars];
  out.append(digits, PutDistance(digits, hit.dist_um));
}

// Copies `key` to `*p` (advancing it) while it is plain; false at the first
// byte that needs escaping, which sends the caller down its escaping path.
bool CopyPlainKey(char*& p, std::string_view key) {
  for (const char ch : key) {
    if (!IsPlainJsonChar(ch)) return false;
    *p++ = ch;
  }
  return true;
}

// Appends `hits` as near items without values. When every key is plain
// (the usual case) the items are written through a pointer into room made
// once, each key checked as it is copied: appending them piece by piece, a
// capacity check each, was about a tenth of a 500-item search's CPU. A key
// that needs escaping sends the whole answer down the escaping path.
void AppendNearItems(std::string& out, const std::vector<GeoHit>& hits) {
  static constexpr std::string_view kKey = "{\"key\":\"";
  static constexpr std::string_view kDist = "\",\"dist_m\":";
  size_t room = 0;
  for (const GeoHit& hit : hits) {
    room += 1 + kKey.size() + hit.key.size() + kDist.size() + kDistanceChars + 1;
  }
  const size_t start = out.size();
  out.resize(start + room);
  char* p = out.data() + start;
  auto put = [&p](std::string_view text) { p = std::copy(text.begin(), text.end(), p); };
  for (size_t i = 0; i < hits.size(); ++i) {
    if (i > 0) *p++ = ',';
    put(kKey);
    if (!CopyPlainKey(p, hits[i].key)) {
      out.resize(start);
      for (size_t j = 0; j < hits.size(); ++j) {
        AppendNearItemHead(out, hits[j], j == 0);
        out += '}';
      }
      return;
    }
    put(kDist);
    p = PutDistance(p, hits[i].dist_um);
    *p++ = '}';
  }
  out.resize(size_t(p - out.data()));
}

// Appends the keys of `hits` as a JSON array of strings, written through a
// pointer as AppendNearItems writes them, with the same escaping fallback.
void AppendKeyArray(std::string& out, const std::vector<GeoHit>& hits) {
  size_t room = 2;
  for (const GeoHit& hit : hits) room += hit.key.size() + 3;
  const size_t start = out.size();
  out.resize(start + room);
  char* p = out.data() + start;
  *p++ = '[';
  for (size_t i = 0; i < hits.size(); ++i) {
    if (i > 0) *p++ = ',';
    *p++ = '"';
    if (!CopyPlainKey(p, hits[i].key)) {
      out.resize(start);
      out += '[';
      for (size_t j = 0; j < hits.size(); ++j) {
        if (j > 0) out += ',';
        AppendJsonString(out, hits[j].key);
      }
      out += ']';
      return;
    }
    *p++ = '"';
  }
  *p++ = ']';
  out.resize(size_t(p - out.data()));
}

// Appends the distances of `hits` as a JSON array of numbers.
void AppendDistanceArray(std::string& out, const std::vector<GeoHit>& hits) {
  const size_t start = out.size();
  out.resize(start + 2 + hits.size() * (kDistanceChars + 1));
  char* p = out.data() + start;
  *p++ = '[';
  for (size_t i = 0; i < hits.size(); ++i) {
    if (i > 0) *p++ = ',';
    p = PutDistance(p, hits[i].dist_um);
  }
  *p++ = ']';
  out.resize(size_t(p - out.data()));
}

std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
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

// Appends a document's JSON text: as it is for the text form, serialised
// for a tree.
void AppendDocument(std::string& out, const CachedDocument& d) {
  if (const auto* text = std::get_if<TextForm>(&d.form)) {
    out += text->json;
  } else if (const auto* tree = std::get_if<TreeForm>(&d.form)) {
    out += doc::Dump(tree->tree);
  }
}

// Gives an absent document an empty tree to compute on (add and merge
// create what they touch); Undo() makes it absent again when the change
// is refused, so a failed add leaves no trace.
class TreeForChange {
 public:
  explicit TreeForChange(CachedDocument& d) : doc_(d), was_absent_(!d.exists()) {
    if (was_absent_) doc_.form = TreeForm{};
  }
  Status Ensure() { return DocumentCache::EnsureTree(doc_); }
  doc::Value& tree() { return std::get<TreeForm>(doc_.form).tree; }
  void Undo() {
    if (was_absent_) doc_.form = AbsentForm{};
  }

 private:
  CachedDocument& doc_;
  const bool was_absent_;
};

// A write's acknowledgement to its connection (Documents::Write's ack).
// The reply is built in the thread's reply buffer; one acknowledged later
// keeps a copy, and counts in the connection's in-flight requests until
// then.
class WriteAck {
 public:
  WriteAck(std::shared_ptr<Connection> conn, uint64_t id, const std::string* reply)
      : conn_(std::move(conn)), id_(id), reply_(reply) {}

  void Later() {
    conn_->in_flight.fetch_add(1, std::memory_order_relaxed);
    owned_ = *reply_;
    later_ = true;
  }

  void operator()(const Status& status) {
    // Before the send: the listener reads the connection again once its
    // replies went out and it is under the in-flight limit.
    if (later_) conn_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (!status.ok()) return conn_->Send(EncodeError(id_, status));
    if (later_) return conn_->Send(std::move(owned_));
    conn_->SendCopy(*reply_);
  }

 private:
  std::shared_ptr<Connection> conn_;
  uint64_t id_;
  const std::string* reply_;  // valid until Later() (or the synchronous call)
  std::string owned_;
  bool later_ = false;
};

}  // namespace

const RequestHandler::OpRow& RequestHandler::RowFor(Op op) {
  // In the order of the Op enum (checked below).
  static const std::array<OpRow, 17> kRows = {{
      {Op::kLogin, Access::kAnyone, true, &RequestHandler::Login},
      {Op::kLogout, Access::kSession, false, &RequestHandler::Logout},
      {Op::kPing, Access::kAnyone, false, &RequestHandler::Ping},
      {Op::kEcho, Access::kAnyone, false, &RequestHandler::Echo},
      {Op::kGet, Access::kReader, false, &RequestHandler::Get},
      {Op::kHas, Access::kReader, false, &RequestHandler::Get},
      {Op::kSet, Access::kWriter, false, &RequestHandler::Set},
      {Op::kDelete, Access::kWriter, false, &RequestHandler::Delete},
      {Op::kAdd, Access::kWriter, false, &RequestHandler::Add},
      {Op::kMerge, Access::kWriter, false, &RequestHandler::Merge},
      {Op::kAll, Access::kReader, true, &RequestHandler::All},
      {Op::kStats, Access::kSession, false, &RequestHandler::Stats},
      // Any logged-in user may sync; the engine limits them to their groups.
      {Op::kPush, Access::kSession, false, &RequestHandler::Push},
      {Op::kPull, Access::kSession, true, &RequestHandler::Pull},
      {Op::kBootstrap, Access::kSession, true, &RequestHandler::Bootstrap},
      {Op::kWait, Access::kSession, false, &RequestHandler::Wait},
      {Op::kNear, Access::kReader, false, &RequestHandler::Near},
  }};
  const OpRow& row = kRows[static_cast<size_t>(op)];
  SKIFF_CHECK(row.op == op);
  return row;
}

RequestHandler::RequestHandler(const ServerOptions& options, store::Store& store,
                               Documents& documents, sync::SyncEngine& sync, StoreWorkers& workers)
    : options_(options),
      limits_(RequestLimits(options)),
      store_(store),
      documents_(documents),
      sync_(sync),
      workers_(workers) {}

void RequestHandler::OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) {
  if (payload.size() > options_.max_frame_bytes) {
    conn->Send(EncodeError(std::nullopt, TooLarge("frame of " + std::to_string(payload.size()) +
                                                  " bytes is over the limit of " +
                                                  std::to_string(options_.max_frame_bytes))));
    conn->Close(kCloseTooBig, "frame too large");
    return;
  }
  Dispatch(conn, payload, 0);
}

void RequestHandler::Dispatch(const std::shared_ptr<Connection>& conn, std::string_view payload,
                              int64_t first_try_ns) {
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
    if (ownership_ != nullptr && Route(conn, request, payload, first_try_ns)) return;
    status = Execute(conn, request, /*on_worker=*/false);
  } catch (const std::exception& e) {
    // Nothing below should throw; if a library does, the request fails and
    // the connection and the server carry on.
    status = Internal(std::string("unexpected error: ") + e.what());
  }
  if (status.code() == StatusCode::kMoved && !conn->cluster_peer) {
    // Cluster mode: the partition stopped being served here between the
    // routing and the write's admission; route it again.
    return Hold(conn, request.id, payload, first_try_ns);
  }
  if (!status.ok()) conn->Send(EncodeError(id, status));
}

void RequestHandler::OnBinary(const std::shared_ptr<Connection>& conn) {
  conn->Send(EncodeError(std::nullopt, BadRequest("binary frames are not part of the protocol; "
                                                  "send each request as a text frame")));
}

void RequestHandler::OnClose(const std::shared_ptr<Connection>& conn) {
  CancelWaits(*conn);
  // Only read: a store worker may still be reading the session.
  if (conn->user) sessions_.fetch_sub(1, std::memory_order_relaxed);
}

Status RequestHandler::Check(const OpRow& row, const Connection& conn, const Request& r) const {
  if (row.access == Access::kAnyone) return Status::Ok();
  if (!conn.user) {
    return Unauthorized("op '" + std::string(OpName(r.op)) + "' needs a logged-in connection");
  }
  if (row.access == Access::kSession) return Status::Ok();
  const bool write = row.access == Access::kWriter;
  if (write ? conn.permissions.CanWrite(r.table) : conn.permissions.CanRead(r.table)) {
    return Status::Ok();
  }
  return Forbidden("user '" + *conn.user + "' may not " + (write ? "write" : "read") + " table '" +
                   r.table + "'");
}

Status RequestHandler::Execute(const std::shared_ptr<Connection>& conn, Request& r,
                               bool on_worker) {
  const OpRow& row = RowFor(r.op);
  SKIFF_RETURN_IF_ERROR(Check(row, *conn, r));
  Call call{conn, r, on_worker};
  if (row.needs_store && !on_worker) return Offload(call);
  return (this->*row.run)(call);
}

Status RequestHandler::Offload(Call& c) {
  Request copy = c.r;
  // Points into the frame, which is gone once this returns; no op that
  // waits for the store reads it.
  copy.raw_value = {};
  c.conn->barrier.fetch_add(1, std::memory_order_acq_rel);
  const size_t hint = std::hash<std::string>{}(c.r.key);
  workers_.Post(hint, [this, conn = c.conn, r = std::move(copy)]() mutable {
    Status status;
    try {
      status = Execute(conn, r, /*on_worker=*/true);
    } catch (const std::exception& e) {
      status = Internal(std::string("unexpected error: ") + e.what());
    }
    if (status.code() == StatusCode::kMoved && !conn->cluster_peer) {
      // The frame is gone here; a client hears what a peer would re-route.
      status = Unavailable("the key's partition is being handed to another instance; retry");
    }
    if (!status.ok()) conn->Send(EncodeError(r.id, status));
    conn->ReleaseBarrier();  // after its reply is queued
  });
  return Status::Ok();
}

Status RequestHandler::Ping(Call& c) {
  std::string& reply = ReplyBuffer();
  ReplyWriter(reply, c.r.id).Finish();
  c.conn->SendCopy(reply);
  return Status::Ok();
}

Status RequestHandler::Echo(Call& c) {
  // A scanned echo sends its data back as it came; a decoded one, as
  // serialised.
  const std::string decoded = c.r.raw_value.empty() ? c.r.value.dump() : std::string();
  std::string& reply = ReplyBuffer();
  ReplyWriter w(reply, c.r.id);
  w.Raw("data", c.r.raw_value.empty() ? std::string_view(decoded) : c.r.raw_value);
  c.conn->SendCopy(w.Finish());
  return Status::Ok();
}

Status RequestHandler::Login(Call& c) {
  if (c.conn->user) {
    return BadRequest("this connection is already logged in as '" + *c.conn->user +
                      "'; log out first");
  }
  if (c.r.user == cluster::kClusterUser) return ClusterLogin(c);
  SKIFF_ASSIGN_OR_RETURN(Account account, AuthenticateAccount(store_, c.r.user, c.r.secret));
  // The session belongs to the connection's I/O thread: set it there. The
  // connection reads nothing more until this has run (Offload).
  c.conn->Post([this, conn = c.conn, user = c.r.user, id = c.r.id,
                session = std::make_shared<Account>(std::move(account))] {
    conn->user = user;
    conn->permissions = std::move(session->permissions);
    conn->groups = std::make_shared<const std::vector<std::string>>(std::move(session->groups));
    sessions_.fetch_add(1, std::memory_order_relaxed);
    conn->Send(EncodeOk(id));
  });
  return Status::Ok();
}

Status RequestHandler::Logout(Call& c) {
  Connection& conn = *c.conn;
  conn.user.reset();
  conn.permissions = Permissions();
  conn.groups.reset();
  conn.read_ahead.Reset();
  sessions_.fetch_sub(1, std::memory_order_relaxed);
  conn.Send(EncodeOk(c.r.id));
  return Status::Ok();
}

Status RequestHandler::Get(Call& c) {
  std::string& reply = ReplyBuffer();
  bool resident = true;
  SKIFF_RETURN_IF_ERROR(documents_.Read(
      c.r.table, c.r.key,
      [&](const CachedDocument& d) {
        ReplyWriter w(reply, c.r.id);
        w.Bool("found", d.exists());
        if (c.r.op == Op::kGet && d.exists()) AppendDocument(w.Open("value").out(), d);
        w.Finish();
      },
      c.on_worker ? nullptr : &resident));
  if (!resident) return Offload(c);
  c.conn->SendCopy(reply);
  return Status::Ok();
}

template <typename ChangeFn>
Status RequestHandler::WriteDocument(Call& c, WriteKind kind, ChangeFn&& change) {
  bool resident = true;
  const bool may_offload = kind == WriteKind::kModify && !c.on_worker;
  SKIFF_RETURN_IF_ERROR(documents_.Write(c.r.table, c.r.key, kind, change,
                                         WriteAck(c.conn, c.r.id, &ReplyBuffer()),
                                         may_offload ? &resident : nullptr));
  if (!resident) return Offload(c);
  return Status::Ok();
}

Status RequestHandler::Set(Call& c) {
  Request& r = c.r;
  // Outside the shard lock. A set always leaves the text form: the compact
  // text it was sent, or the tree the full decoder read, serialised.
  std::string text = r.raw_value.empty() ? doc::Dump(r.value) : CompactJson(r.raw_value);
  return WriteDocument(c, WriteKind::kReplace, [&](CachedDocument& d) -> Result<Changed> {
    d.form = TextForm{std::move(text)};
    ReplyWriter(ReplyBuffer(), r.id).Finish();
    return Changed::kYes;
  });
}

Status RequestHandler::Delete(Call& c) {
  // A user who may write but not read the table is not told whether the
  // document existed.
  const bool may_read = c.conn->permissions.CanRead(c.r.table);
  return WriteDocument(c, WriteKind::kModify, [&](CachedDocument& d) -> Result<Changed> {
    const bool found = d.exists();
    ReplyWriter w(ReplyBuffer(), c.r.id);
    if (may_read) w.Bool("found", found);
    w.Finish();
    if (!found) return Changed::kNo;
    d.form = AbsentForm{};
    return Changed::kYes;
  });
}

Status RequestHandler::Add(Call& c) {
  Request& r = c.r;
  // The test seam: acknowledge without applying.
  if (const uint32_t n = lose_one_add_in_.load(std::memory_order_relaxed);
      n > 0 && adds_seen_.fetch_add(1, std::memory_order_relaxed) % n == n - 1) {
    c.conn->Send(EncodeOkRaw(r.id, "value", r.value.dump()));
    return Status::Ok();
  }
  // A user who may write but not read the table is not told the sum.
  const bool may_read = c.conn->permissions.CanRead(r.table);
  return WriteDocument(c, WriteKind::kModify, [&](CachedDocument& d) -> Result<Changed> {
    // AddAtPath leaves the tree unchanged on error, so work in place:
    // copying a large document for every add would dominate its cost.
    TreeForChange tree(d);
    SKIFF_RETURN_IF_ERROR(tree.Ensure());
    Result<doc::Value> sum = doc::AddAtPath(tree.tree(), r.path, r.value);
    if (!sum.ok()) {
      tree.Undo();
      return sum.status();
    }
    ReplyWriter w(ReplyBuffer(), r.id);
    if (may_read) w.Raw("value", NumberText(*sum));
    w.Finish();
    return Changed::kYes;
  });
}

Status RequestHandler::Merge(Call& c) {
  Request& r = c.r;
  return WriteDocument(c, WriteKind::kModify, [&](CachedDocument& d) -> Result<Changed> {
    TreeForChange tree(d);
    SKIFF_RETURN_IF_ERROR(tree.Ensure());
    if (Status merged = doc::MergePatch(tree.tree(), r.value, limits_.max_depth); !merged.ok()) {
      tree.Undo();
      return merged;
    }
    ReplyWriter(ReplyBuffer(), r.id).Finish();
    return Changed::kYes;
  });
}

Status RequestHandler::Near(Call& c) {
  const Request& r = c.r;
  if (ownership_ != nullptr) {
    // Each instance's index follows only the writes it serves.
    return BadRequest("near is not available in cluster mode yet (docs/cluster.md)");
  }
  thread_local std::vector<GeoHit> hits;
  SKIFF_RETURN_IF_ERROR(documents_.geo().Nearest(r.table, r.geo, &hits));
  // The documents first, when asked for: one deleted since the index
  // answered is left out of the answer, in either form.
  std::string values;
  std::vector<size_t> value_ends;
  if (r.values) {
    value_ends.reserve(hits.size());
    size_t kept = 0;
    for (size_t i = 0; i < hits.size(); ++i) {
      bool resident = true;
      bool exists = false;
      SKIFF_RETURN_IF_ERROR(documents_.Read(
          r.table, hits[i].key,
          [&](const CachedDocument& d) {
            exists = d.exists();
            if (exists) AppendDocument(values, d);
          },
          c.on_worker ? nullptr : &resident));
      // Evicted: the whole answer is made again on a store worker.
      if (!resident) return Offload(c);
      if (!exists) continue;
      if (kept != i) hits[kept] = std::move(hits[i]);
      ++kept;
      value_ends.push_back(values.size());
    }
    hits.resize(kept);
  }
  std::string reply;
  // One allocation for the whole reply instead of a doubling run: an item
  // without its value takes 37 bytes of room and its key (AppendNearItems).
  reply.reserve(64 + hits.size() * 64 + values.size() + value_ends.size() * 16);
  ReplyWriter w(reply, r.id);
  std::string& out = w.out();
  auto value = [&](size_t i) {
    const size_t begin = i == 0 ? 0 : value_ends[i - 1];
    return std::string_view(values).substr(begin, value_ends[i] - begin);
  };
  if (r.columns) {
    w.Open("keys");
    AppendKeyArray(out, hits);
    w.Open("dist_m");
    AppendDistanceArray(out, hits);
    if (r.values) {
      w.Open("values");
      out += '[';
      for (size_t i = 0; i < hits.size(); ++i) {
        if (i > 0) out += ',';
        out += value(i);
      }
      out += ']';
    }
  } else if (!r.values) {
    w.Open("items");
    out += '[';
    AppendNearItems(out, hits);
    out += ']';
  } else {
    w.Open("items");
    out += '[';
    for (size_t i = 0; i < hits.size(); ++i) {
      AppendNearItemHead(out, hits[i], i == 0);
      out += ",\"value\":";
      out += value(i);
      out += '}';
    }
    out += ']';
  }
  c.conn->Send(std::move(w.Finish()));
  return Status::Ok();
}

Status RequestHandler::All(Call& c) {
  const Request& r = c.r;
  // The store is the source for scans; first make it hold every write
  // already applied in memory.
  SKIFF_RETURN_IF_ERROR(documents_.Flush());
  SKIFF_ASSIGN_OR_RETURN(store::ScanPage page, store_.Scan(r.table, r.after, r.limit));
  std::string reply;
  ReplyWriter w(reply, r.id);
  std::string& out = w.Open("items").out();
  out += '[';
  for (size_t i = 0; i < page.items.size(); ++i) {
    const store::KeyValue& item = page.items[i];
    if (i > 0) out += ',';
    out += "{\"key\":";
    AppendJsonString(out, item.key);
    out += ",\"value\":";
    out += item.value;
    out += '}';
  }
  out += ']';
  w.Raw("next", page.next ? JsonString(*page.next) : "null");
  c.conn->Send(std::move(w.Finish()));
  return Status::Ok();
}

Status RequestHandler::Stats(Call& c) {
  TierStats tiers = documents_.tiers();
  CommitterCounters commits = documents_.commits();
  sync::SyncCounters sync = sync_.counters();
  const ListenerStats network = network_stats_ ? network_stats_() : ListenerStats();
  doc::Value geo = doc::Value::object();
  for (const GeoTableStats& g : documents_.geo().Stats()) {
    geo[g.table] = {{"reads", g.reads},
                    {"points", g.points},
                    {"unindexed", g.unindexed},
                    {"bytes", g.bytes},
                    {"bytes_per_point", g.points == 0 ? 0.0 : double(g.bytes) / double(g.points)},
                    {"rebuild_ms", g.rebuild_ms}};
  }
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
        {"waits_expired", sync.waits_expired},
        // Cluster mode: reads of the groups other instances moved (one
        // store statement each).
        {"catch_ups", sync.catch_ups},
        // Bootstrap pages read before they were asked for, those a request
        // was answered from, those not read for want of room, and the bytes
        // kept now (bootstrap_read_ahead.h).
        {"pages_read_ahead", pages_read_ahead_.load(std::memory_order_relaxed)},
        {"pages_from_read_ahead", pages_from_read_ahead_.load(std::memory_order_relaxed)},
        {"read_ahead_refused", read_ahead_refused_.load(std::memory_order_relaxed)},
        {"read_ahead_bytes", read_ahead_budget_->used()}}},
      {"geo", std::move(geo)},
  };
  if (ownership_ != nullptr) {
    fields["cluster"] = {{"instance", ownership_->id()},
                         {"partitions_served", ownership_->served()}};
  }
  c.conn->Send(EncodeOk(c.r.id, fields));
  return Status::Ok();
}

}  // namespace skiff::server::internal
