// RequestHandler: executes v1 requests for the listener's connections.
//
// Each frame is decoded by the wire decoder (wire/request_decoder.h), then
// dispatched through one table of ops: a row says who may run the op
// (anyone, a session, readers or writers of the table) and which method
// runs it; replies are written by the wire encoder (wire/replies.h and its
// neighbours), so nothing here parses or prints JSON.
// Reads reply at once; writes go through Documents, the one write path, and
// reply when it acknowledges them; pushes after their commit; held waits
// when the engine answers them. Nothing here blocks an I/O thread on the
// store: a request that must wait for it (a login, a scan, a pull or
// bootstrap, a document not in memory) is handed to a store worker with
// what it has done so far, its access already checked, and its connection
// is not read until it is answered, so a connection's requests still take
// effect in the order it sent them.
// Thread-safe: called from every I/O thread and the store workers;
// per-connection calls are serial (see listener.h and Connection::barrier).
#ifndef SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_
#define SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/internal/bootstrap_read_ahead.h"
#include "server/internal/documents.h"
#include "server/internal/listener.h"
#include "server/internal/login_guard.h"
#include "server/internal/request_metrics.h"
#include "server/internal/store_workers.h"
#include "server/internal/user_limits.h"
#include "server/internal/wire/request.h"
#include "server/internal/wire/stats_reply.h"
#include "server/server_options.h"
#include "store/store.h"
#include "sync/sync_engine.h"

namespace skiff::server::internal {

class RequestHandler final : public ListenerHandler {
 public:
  // `more_stats`, when given, adds the figures of a handler wrapped around
  // this one (the cluster router's) to every `stats` reply.
  RequestHandler(const ServerOptions& options, store::Store& store, Documents& documents,
                 sync::SyncEngine& sync, StoreWorkers& workers,
                 std::function<void(StatsFigures& figures)> more_stats = nullptr);

  // Where `stats` reads the listener's figures.
  void set_network_stats(std::function<ListenerStats()> stats) {
    network_stats_ = std::move(stats);
  }
  // Cluster mode: what runs before a watch of a table opens (the cluster's
  // watch feed, cluster/watch_feed.h: makes the table watched everywhere and
  // catches up). Set before the listener starts.
  void set_cluster_watch(std::function<Status(const std::string& table)> follow) {
    cluster_watch_ = std::move(follow);
  }

  void OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) override;
  void OnBinary(const std::shared_ptr<Connection>& conn) override;
  void OnClose(const std::shared_ptr<Connection>& conn) override;
  // The /metrics page: the figures of `stats` and the request counters.
  std::optional<std::string> MetricsPage() override;

  size_t sessions() const { return sessions_.load(std::memory_order_relaxed); }

  // The steps of OnText, for a handler wrapped around this one (the
  // cluster router), all on the connection's I/O thread:
  //
  // Decodes one frame into `*request`. False when it is not a request: its
  // error was sent (a frame over the limit also closes the connection).
  bool Decode(const std::shared_ptr<Connection>& conn, std::string_view payload, Request* request);
  // The verdict of an access check that passed. Only CheckAccess makes
  // one, so a request run with it was checked, once, on its connection's
  // I/O thread, before the caller routed it.
  class Granted {
   private:
    friend class RequestHandler;
    Granted() = default;
  };
  // Whether the connection's session may run the request's op: granted, or
  // the error to send (unauthorized, forbidden).
  Result<Granted> CheckAccess(const Connection& conn, const Request& request) const;
  // Runs a decoded request here; its reply or error goes to `conn`. Its
  // access is checked first, unless `granted` carries the verdict of a
  // check already made (the session does not change in between: both run
  // on the connection's I/O thread, one after the other). One error is
  // returned instead, with nothing sent: `moved` (Documents::Admit: the key
  // is not served here), for the caller to route the request again. On a
  // store worker the frame is gone, so a `moved` met there is sent: as it
  // is with `send_moved` (the connection routes it again itself), as
  // unavailable otherwise.
  Status Run(const std::shared_ptr<Connection>& conn, Request& request,
             std::optional<Granted> granted = std::nullopt, bool send_moved = false);
  // Opens a session for a user authenticated by the caller, as a login does.
  void OpenSession(Connection& conn, std::string user, Permissions permissions);

 private:
  // One request being run, and whether on a store worker (where it may
  // wait for the store) or on an I/O thread (where it may not).
  struct Call {
    const std::shared_ptr<Connection>& conn;
    Request& r;
    bool on_worker;
    bool send_moved;  // see Run
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

  // Checks access unless `granted`, and runs the request on the I/O thread;
  // returns an error to send instead.
  Status Execute(const std::shared_ptr<Connection>& conn, Request& r, bool granted,
                 bool send_moved);
  Status Check(const OpRow& row, const Connection& conn, const Request& r) const;
  // What is left of a request once it must wait for the store.
  using Rest = std::function<Status(Call&)>;
  // Hands the rest of a checked request to a store worker and holds the
  // connection's reading until it is answered. The access verdict goes
  // with it: the worker runs `rest` (an op's method, or what is left of
  // one) and nothing before it, the check included.
  Status Offload(Call& call, Rest rest);
  Status Offload(Call& call, Method run);

  Status Ping(Call& c);
  Status Echo(Call& c);
  Status Login(Call& c);
  // Login's token form (docs/protocol.md, "Login with a token").
  Status TokenLogin(Call& c);
  // Whether the connection's session came from a token now expired.
  static bool SessionExpired(const Connection& conn);
  // Logs the connection out (logout, or its token expired).
  void EndSession(Connection& conn);
  Status Logout(Call& c);
  Status Get(Call& c);
  Status Set(Call& c);
  Status Delete(Call& c);
  Status Add(Call& c);
  Status Merge(Call& c);
  Status All(Call& c);
  Status Stats(Call& c);
  // What `stats` and /metrics report.
  StatsFigures Figures() const;
  // Refuses a request for a limit: sends rate_limited with `retry_after_ms`
  // and returns that code, which Run and Offload then count but do not send
  // again.
  Status Refuse(Call& c, LimitReason reason, uint64_t retry_after_ms, const std::string& why);
  // Before a login's secret is checked: rate_limited while its address is
  // blocked for failed logins.
  Status GuardLogin(Call& c);
  // After it: counts a failure for the address, or forgets its failures.
  void CountLogin(Call& c, const Status& checked);
  // rate_limited when `user` holds max_connections_per_user sessions now.
  Status CheckUserSessions(Call& c, const std::string& user);
  // On the connection's I/O thread, as a login opens its session: takes the
  // user's place, or sends rate_limited and returns false (two logins of
  // one user may both have passed CheckUserSessions).
  bool TakeUserSession(Connection& conn, uint64_t id, const std::string& user);
  // The nearest documents of a table with a geo index; with `values`, each
  // with its document (read like get's, offloaded when one is evicted).
  Status Near(Call& c);
  // A near answer under way: the index's hits and the documents read so far.
  struct NearAnswer;
  // Reads the documents of `answer` from where it stopped, then replies.
  Status FinishNear(Call& c, NearAnswer& answer);
  // Live values (request_handler_watch.cc).
  Status Watch(Call& c);
  Status Unwatch(Call& c);
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
  std::function<Status(const std::string&)> cluster_watch_;
  const std::function<void(StatsFigures&)> more_stats_;
  std::atomic<size_t> sessions_{0};
  // The handler is given no Clock; the limits and the latency figures read
  // the system's own (a test of the limits drives them with ManualClock).
  const SystemClock system_clock_;
  UserLimits user_limits_;
  LoginGuard login_guard_;
  RequestMetrics request_metrics_;
  // Bootstrap pages read ahead, across connections (bootstrap_read_ahead.h):
  // 64 MiB holds about 170 pages of 1,000 rows of ~200 bytes.
  const std::shared_ptr<ReadAheadBudget> read_ahead_budget_ =
      std::make_shared<ReadAheadBudget>(size_t{64} << 20);
  std::atomic<uint64_t> pages_read_ahead_{0};       // kept
  std::atomic<uint64_t> pages_from_read_ahead_{0};  // answered from a kept page
  std::atomic<uint64_t> read_ahead_refused_{0};     // not read: no room in the budget
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_
