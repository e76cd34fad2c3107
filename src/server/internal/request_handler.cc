#include "server/internal/request_handler.h"

#include <array>
#include <ctime>
#include <exception>
#include <utility>
#include <vector>

#include "doc/merge.h"
#include "doc/path.h"
#include "geo/query.h"
#include "server/internal/metrics_page.h"
#include "server/internal/wire/near_reply.h"
#include "server/internal/wire/replies.h"
#include "server/internal/wire/request_decoder.h"
#include "server/internal/wire/request_fields.h"
#include "server/internal/wire/stats_reply.h"
#include "server/users.h"

namespace skiff::server::internal {
namespace {

doc::Limits RequestLimits(const ServerOptions& options) {
  doc::Limits limits;
  limits.max_depth = options.max_depth;
  limits.max_document_bytes = options.max_frame_bytes;
  return limits;
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

// Unix seconds, for token expiry: a token's dates are wall-clock dates.
// The coarse clock is read on every request of a token session and is
// exact enough for dates in whole seconds.
int64_t UnixNow() {
  timespec ts;
  if (clock_gettime(CLOCK_REALTIME_COARSE, &ts) != 0) clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec;
}

// Set when the request being run on this I/O thread was handed to a store
// worker, which then counts it: Run counts only the requests it answered.
thread_local bool t_offloaded = false;

// How long a login refused for its user's sessions is told to wait: a
// session ends when a client lets it go, at no time the server knows.
constexpr uint64_t kSessionRetryMs = 1000;

}  // namespace

const RequestHandler::OpRow& RequestHandler::RowFor(Op op) {
  // In the order of the Op enum (checked below).
  static const std::array<OpRow, 19> kRows = {{
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
      // On a store worker: the first watch of a table waits for earlier
      // commits, and initial values are read from the store.
      {Op::kWatch, Access::kReader, true, &RequestHandler::Watch},
      {Op::kUnwatch, Access::kSession, false, &RequestHandler::Unwatch},
  }};
  const OpRow& row = kRows[static_cast<size_t>(op)];
  SKIFF_CHECK(row.op == op);
  return row;
}

RequestHandler::RequestHandler(const ServerOptions& options, store::Store& store,
                               Documents& documents, sync::SyncEngine& sync, StoreWorkers& workers,
                               std::function<void(StatsFigures& figures)> more_stats)
    : options_(options),
      limits_(RequestLimits(options)),
      store_(store),
      documents_(documents),
      sync_(sync),
      workers_(workers),
      more_stats_(std::move(more_stats)),
      user_limits_(system_clock_, options.user_rate, options.user_burst,
                   options.max_connections_per_user),
      login_guard_(system_clock_, options.max_failed_logins, options.failed_login_window) {}

void RequestHandler::OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) {
  Request request;
  if (!Decode(conn, payload, &request)) return;
  if (Status status = Run(conn, request); !status.ok()) {
    conn->Send(EncodeError(request.id, status));
  }
}

bool RequestHandler::Decode(const std::shared_ptr<Connection>& conn, std::string_view payload,
                            Request* request) {
  if (payload.size() > options_.max_frame_bytes) {
    conn->Send(EncodeError(std::nullopt, TooLarge("frame of " + std::to_string(payload.size()) +
                                                  " bytes is over the limit of " +
                                                  std::to_string(options_.max_frame_bytes))));
    conn->Close(kCloseTooBig, "frame too large");
    return false;
  }
  std::optional<uint64_t> id;
  if (Status decoded = DecodeFrame(payload, limits_, request, &id); !decoded.ok()) {
    conn->Send(EncodeError(id, decoded));
    return false;
  }
  return true;
}

Result<RequestHandler::Granted> RequestHandler::CheckAccess(const Connection& conn,
                                                            const Request& request) const {
  SKIFF_RETURN_IF_ERROR(Check(RowFor(request.op), conn, request));
  return Granted();
}

Status RequestHandler::Run(const std::shared_ptr<Connection>& conn, Request& request,
                           std::optional<Granted> granted, bool send_moved) {
  // From when the request's bytes were read (SystemClock is steady_clock).
  const Clock::TimePoint start = conn->read_at_ns != 0
                                     ? Clock::TimePoint(Clock::Duration(conn->read_at_ns))
                                     : system_clock_.Now();
  Status status;
  t_offloaded = false;
  try {
    if (user_limits_.limits_requests() && conn->user) {
      if (const uint64_t wait = user_limits_.TakeRequest(*conn->user); wait > 0) {
        Call call{conn, request, /*on_worker=*/false, send_moved};
        status = Refuse(call, LimitReason::kUserRate, wait,
                        "user '" + *conn->user + "' is over its request rate");
      }
    }
    if (status.ok()) status = Execute(conn, request, granted.has_value(), send_moved);
  } catch (const std::exception& e) {
    // Nothing below should throw; if a library does, the request fails and
    // the connection and the server carry on.
    status = Internal(std::string("unexpected error: ") + e.what());
  }
  // Moved: routed again, and counted where it is answered.
  if (status.code() == StatusCode::kMoved) return status;
  if (!status.ok() && status.code() != StatusCode::kRateLimited) {
    conn->Send(EncodeError(request.id, status));
  }
  // An offloaded request is counted by its store worker, once answered.
  if (!t_offloaded) request_metrics_.Record(request.op, status.code(), system_clock_.Now() - start);
  return Status::Ok();
}

void RequestHandler::OpenSession(Connection& conn, std::string user, Permissions permissions) {
  conn.user = std::move(user);
  conn.permissions = std::move(permissions);
  sessions_.fetch_add(1, std::memory_order_relaxed);
  user_limits_.AddSession(*conn.user);
}

void RequestHandler::OnBinary(const std::shared_ptr<Connection>& conn) {
  conn->Send(EncodeError(std::nullopt, BadRequest("binary frames are not part of the protocol; "
                                                  "send each request as a text frame")));
}

void RequestHandler::OnClose(const std::shared_ptr<Connection>& conn) {
  CancelWaits(*conn);
  documents_.watches().Drop(*conn);
  // Only read: a store worker may still be reading the session.
  if (conn->user) {
    sessions_.fetch_sub(1, std::memory_order_relaxed);
    user_limits_.EndSession(*conn->user);
  }
}

Status RequestHandler::Check(const OpRow& row, const Connection& conn, const Request& r) const {
  // A login replaces an expired session; anything else ends at it.
  if (r.op != Op::kLogin && SessionExpired(conn)) return Unauthorized("token expired");
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

Status RequestHandler::Execute(const std::shared_ptr<Connection>& conn, Request& r, bool granted,
                               bool send_moved) {
  const OpRow& row = RowFor(r.op);
  if (SessionExpired(*conn)) {
    EndSession(*conn);
    if (r.op != Op::kLogin) return Unauthorized("token expired");
  }
  if (!granted) SKIFF_RETURN_IF_ERROR(Check(row, *conn, r));
  Call call{conn, r, /*on_worker=*/false, send_moved};
  if (row.needs_store) return Offload(call, row.run);
  return (this->*row.run)(call);
}

Status RequestHandler::Offload(Call& c, Method run) {
  return Offload(c, [this, run](Call& w) { return (this->*run)(w); });
}

Status RequestHandler::Offload(Call& c, Rest rest) {
  Request copy = c.r;
  // Points into the frame, which is gone once this returns; no op that
  // waits for the store reads it.
  copy.raw_value = {};
  copy.near_keys = nullptr;  // the caller's, used before any offload
  c.conn->barrier.fetch_add(1, std::memory_order_acq_rel);
  const size_t hint = std::hash<std::string>{}(c.r.key);
  t_offloaded = true;
  workers_.Post(
      hint,
      [this, conn = c.conn, r = std::move(copy), send_moved = c.send_moved, rest = std::move(rest),
       start = c.conn->read_at_ns != 0 ? Clock::TimePoint(Clock::Duration(c.conn->read_at_ns))
                                       : system_clock_.Now()]() mutable {
        Status status;
        try {
          Call call{conn, r, /*on_worker=*/true, send_moved};
          status = rest(call);
        } catch (const std::exception& e) {
          status = Internal(std::string("unexpected error: ") + e.what());
        }
        if (status.code() == StatusCode::kMoved && !send_moved) {
          // The frame is gone here; a client hears what a peer would re-route.
          status = Unavailable("the key's partition is being handed to another instance; retry");
        }
        if (!status.ok() && status.code() != StatusCode::kRateLimited) {
          conn->Send(EncodeError(r.id, status));
        }
        request_metrics_.Record(r.op, status.code(), system_clock_.Now() - start);
        conn->ReleaseBarrier();  // after its reply is queued
      });
  return Status::Ok();
}

Status RequestHandler::Ping(Call& c) {
  std::string& reply = ReplyBuffer();
  AppendOk(reply, c.r.id);
  c.conn->SendCopy(reply);
  return Status::Ok();
}

Status RequestHandler::Echo(Call& c) {
  std::string& reply = ReplyBuffer();
  AppendEchoReply(reply, c.r);
  c.conn->SendCopy(reply);
  return Status::Ok();
}

Status RequestHandler::Login(Call& c) {
  const bool secret_form = !c.r.user.empty() || !c.r.secret.empty();
  const bool token_form = !c.r.token.empty();
  if (secret_form == token_form) {
    return BadRequest("login takes exactly one of two forms: user and secret, or token");
  }
  if (c.conn->user && !SessionExpired(*c.conn)) {
    return BadRequest("this connection is already logged in as '" + *c.conn->user +
                      "'; log out first");
  }
  if (token_form) return TokenLogin(c);
  if (c.r.user.empty() || c.r.secret.empty()) {
    return BadRequest("login with a secret needs both user and secret");
  }
  SKIFF_RETURN_IF_ERROR(GuardLogin(c));
  Result<Account> checked = AuthenticateAccount(store_, c.r.user, c.r.secret);
  CountLogin(c, checked.status());
  SKIFF_ASSIGN_OR_RETURN(Account account, std::move(checked));
  SKIFF_RETURN_IF_ERROR(CheckUserSessions(c, c.r.user));
  // The session belongs to the connection's I/O thread: set it there. The
  // connection reads nothing more until this has run (Offload).
  c.conn->Post([this, conn = c.conn, user = c.r.user, id = c.r.id,
                session = std::make_shared<Account>(std::move(account))] {
    if (conn->user) EndSession(*conn);  // an expired token session, replaced
    if (!TakeUserSession(*conn, id, user)) return;
    conn->user = user;
    conn->permissions = std::move(session->permissions);
    conn->groups = std::make_shared<const std::vector<std::string>>(std::move(session->groups));
    sessions_.fetch_add(1, std::memory_order_relaxed);
    conn->Send(EncodeOk(id));
  });
  return Status::Ok();
}

Status RequestHandler::TokenLogin(Call& c) {
  if (!options_.token_verifier) return Unauthorized("this server takes no tokens");
  SKIFF_ASSIGN_OR_RETURN(auth::VerifiedToken token,
                         options_.token_verifier->Verify(c.r.token, UnixNow()));
  if (!ValidateUserName(token.subject).ok()) {
    return Unauthorized("token subject (sub) is missing or not a valid user name");
  }
  auto session = std::make_shared<auth::VerifiedToken>(std::move(token));
  c.conn->Post([this, conn = c.conn, id = c.r.id, session] {
    if (conn->user) EndSession(*conn);  // an expired one, replaced
    if (!TakeUserSession(*conn, id, session->subject)) return;
    conn->user = session->subject;
    conn->permissions = Permissions(std::move(session->read), std::move(session->write));
    conn->groups = std::make_shared<const std::vector<std::string>>(std::move(session->groups));
    conn->session_ends_at_s = session->ends_at_s;
    sessions_.fetch_add(1, std::memory_order_relaxed);
    conn->Send(EncodeOk(id));
  });
  return Status::Ok();
}

bool RequestHandler::SessionExpired(const Connection& conn) {
  return conn.user && conn.session_ends_at_s != 0 && UnixNow() >= conn.session_ends_at_s;
}

void RequestHandler::EndSession(Connection& conn) {
  if (!conn.user) return;
  // Watches were allowed by the session's permissions.
  // On the connection's loop (its handler, or a task it posted): the
  // `ended` events leave before any reply that follows.
  documents_.watches().EndAll(conn, "logout", "the session ended; log in and watch again");
  documents_.watches().DeliverOwn(conn);
  user_limits_.EndSession(*conn.user);
  conn.user.reset();
  conn.permissions = Permissions();
  conn.groups.reset();
  conn.session_ends_at_s = 0;
  conn.read_ahead.Reset();
  sessions_.fetch_sub(1, std::memory_order_relaxed);
}

Status RequestHandler::Logout(Call& c) {
  EndSession(*c.conn);
  c.conn->Send(EncodeOk(c.r.id));
  return Status::Ok();
}

Status RequestHandler::Get(Call& c) {
  std::string& reply = ReplyBuffer();
  bool resident = true;
  SKIFF_RETURN_IF_ERROR(documents_.Read(
      c.r.table, c.r.key,
      [&](const CachedDocument& d) { AppendReadReply(reply, c.r.id, c.r.op == Op::kGet, d); },
      c.on_worker ? nullptr : &resident));
  // Not in memory: a store worker makes this read, which loads it, and
  // replies; the request is not decoded, checked or dispatched again.
  if (!resident) return Offload(c, &RequestHandler::Get);
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
  // Nothing was changed: the op's write is made there, reading the
  // document first.
  if (!resident) return Offload(c, RowFor(c.r.op).run);
  return Status::Ok();
}

Status RequestHandler::Set(Call& c) {
  Request& r = c.r;
  // Outside the shard lock. A set always leaves the text form: the compact
  // text it was sent, or the tree the full decoder read, serialised.
  std::string text = SetDocumentText(r);
  return WriteDocument(c, WriteKind::kReplace, [&](CachedDocument& d) -> Result<Changed> {
    d.form = TextForm{std::move(text)};
    AppendOk(ReplyBuffer(), r.id);
    return Changed::kYes;
  });
}

Status RequestHandler::Delete(Call& c) {
  // A user who may write but not read the table is not told whether the
  // document existed.
  const bool may_read = c.conn->permissions.CanRead(c.r.table);
  return WriteDocument(c, WriteKind::kModify, [&](CachedDocument& d) -> Result<Changed> {
    const bool found = d.exists();
    AppendDeleteReply(ReplyBuffer(), c.r.id, may_read ? std::optional<bool>(found) : std::nullopt);
    if (!found) return Changed::kNo;
    d.form = AbsentForm{};
    return Changed::kYes;
  });
}

Status RequestHandler::Add(Call& c) {
  Request& r = c.r;
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
    AppendAddReply(ReplyBuffer(), r.id, may_read ? &*sum : nullptr);
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
    AppendOk(ReplyBuffer(), r.id);
    return Changed::kYes;
  });
}

struct RequestHandler::NearAnswer {
  std::vector<geo::GeoHit> hits;  // the first `kept` are answered, in order
  NearValues values;              // the documents of the kept hits
  size_t next = 0;                // the hit whose document is read next
  size_t kept = 0;

  void Reset() {
    hits.clear();
    if (values.text.capacity() > (size_t{1} << 20)) std::string().swap(values.text);
    values.text.clear();
    values.ends.clear();
    next = kept = 0;
  }
};

Status RequestHandler::Near(Call& c) {
  // Kept per thread: an answer costs no allocation once the thread has
  // made one as large.
  thread_local NearAnswer answer;
  answer.Reset();
  SKIFF_RETURN_IF_ERROR(documents_.geo().Nearest(c.r.table, c.r.geo, &answer.hits, c.r.near_keys));
  return FinishNear(c, answer);
}

Status RequestHandler::FinishNear(Call& c, NearAnswer& a) {
  const Request& r = c.r;
  // The documents first, when asked for: one deleted since the index
  // answered is left out of the answer, in either form.
  for (; r.values && a.next < a.hits.size(); ++a.next) {
    bool resident = true;
    bool exists = false;
    SKIFF_RETURN_IF_ERROR(documents_.Read(
        r.table, a.hits[a.next].key,
        [&](const CachedDocument& d) {
          exists = d.exists();
          if (exists) AppendDocument(a.values.text, d);
        },
        c.on_worker ? nullptr : &resident));
    if (!resident) {
      // Evicted: a store worker goes on from this hit with the answer so
      // far; the index is not asked again, nor the documents read so far.
      auto rest = std::make_shared<NearAnswer>(std::move(a));
      return Offload(c, [this, rest](Call& w) { return FinishNear(w, *rest); });
    }
    if (!exists) continue;
    if (a.kept != a.next) a.hits[a.kept] = std::move(a.hits[a.next]);
    ++a.kept;
    a.values.ends.push_back(a.values.text.size());
  }
  if (r.values) a.hits.resize(a.kept);
  c.conn->Send(EncodeNearReply(r.id, a.hits, r.values ? &a.values : nullptr, r.columns));
  return Status::Ok();
}

Status RequestHandler::All(Call& c) {
  const Request& r = c.r;
  // The store is the source for scans; first make it hold every write
  // already applied in memory.
  SKIFF_RETURN_IF_ERROR(documents_.Flush());
  SKIFF_ASSIGN_OR_RETURN(store::ScanPage page, store_.Scan(r.table, r.after, r.limit));
  c.conn->Send(EncodeAllReply(r.id, page));
  return Status::Ok();
}

Status RequestHandler::Stats(Call& c) {
  c.conn->Send(EncodeStatsReply(c.r.id, Figures()));
  return Status::Ok();
}

std::optional<std::string> RequestHandler::MetricsPage() {
  return RenderMetricsPage(Figures(), request_metrics_);
}

StatsFigures RequestHandler::Figures() const {
  StatsFigures f;
  f.tiers = documents_.tiers();
  f.commits = documents_.commits();
  f.network = network_stats_ ? network_stats_() : ListenerStats();
  f.sessions = sessions();
  f.durability = DurabilityName(options_.durability);
  f.store = store_.kind();
  f.store_statements = store_.counters().statements;
  f.sync_cursor = sync_.cursor();
  f.sync = sync_.counters();
  f.pages_read_ahead = pages_read_ahead_.load(std::memory_order_relaxed);
  f.pages_from_read_ahead = pages_from_read_ahead_.load(std::memory_order_relaxed);
  f.read_ahead_refused = read_ahead_refused_.load(std::memory_order_relaxed);
  f.read_ahead_bytes = read_ahead_budget_->used();
  f.geo = documents_.geo().Stats();
  if (WatchStats w = documents_.watches().stats(); w.opened > 0 || w.refused > 0) f.watch = w;
  if (user_limits_.limits_requests() || user_limits_.limits_sessions() || login_guard_.enabled()) {
    LimitStats& l = f.limits.emplace();
    l.refused_user_rate = request_metrics_.refusals(LimitReason::kUserRate);
    l.refused_user_connections = request_metrics_.refusals(LimitReason::kUserConnections);
    l.refused_failed_logins = request_metrics_.refusals(LimitReason::kFailedLogins);
    l.failed_logins = request_metrics_.failed_logins();
    l.addresses_tracked = login_guard_.tracked();
  }
  if (more_stats_) more_stats_(f);
  return f;
}

Status RequestHandler::Refuse(Call& c, LimitReason reason, uint64_t retry_after_ms,
                              const std::string& why) {
  request_metrics_.RecordRefusal(reason);
  c.conn->Send(EncodeRateLimited(
      c.r.id, why + "; retry after " + std::to_string(retry_after_ms) + " ms", retry_after_ms));
  return Status(StatusCode::kRateLimited, why);
}

Status RequestHandler::GuardLogin(Call& c) {
  if (!login_guard_.enabled()) return Status::Ok();
  const uint64_t wait = login_guard_.Blocked(std::string(c.conn->remote_address()));
  if (wait == 0) return Status::Ok();
  return Refuse(c, LimitReason::kFailedLogins, wait, "too many failed logins from this address");
}

void RequestHandler::CountLogin(Call& c, const Status& checked) {
  if (checked.code() == StatusCode::kUnauthorized) {
    request_metrics_.RecordFailedLogin();
    login_guard_.Failed(std::string(c.conn->remote_address()));
  } else if (checked.ok()) {
    login_guard_.Succeeded(std::string(c.conn->remote_address()));
  }
}

Status RequestHandler::CheckUserSessions(Call& c, const std::string& user) {
  if (!user_limits_.limits_sessions() || !user_limits_.SessionsFull(user)) return Status::Ok();
  return Refuse(c, LimitReason::kUserConnections, kSessionRetryMs,
                "user '" + user + "' holds its most connections");
}

bool RequestHandler::TakeUserSession(Connection& conn, uint64_t id, const std::string& user) {
  if (user_limits_.BeginSession(user)) return true;
  request_metrics_.RecordRefusal(LimitReason::kUserConnections);
  conn.Send(
      EncodeRateLimited(id, "user '" + user + "' holds its most connections", kSessionRetryMs));
  return false;
}

}  // namespace skiff::server::internal
