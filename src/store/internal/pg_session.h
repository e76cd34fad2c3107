// PgSession: PostgresStore's one connection to PostgreSQL, and everything
// that keeps a call on it bounded and its outcome known.
//
// Deadlines: the server cancels a statement past statement_timeout or a lock
// wait past lock_timeout (both SET on each connection), and a SocketDeadline
// shuts the socket of a call still blocked after call_timeout, so a frozen
// server or a dead link fails the call instead of holding it. A lost or
// timed-out connection fails the call in flight with `unavailable` and is
// reopened by the next call. Waits (for the server at open, for a commit's
// outcome) end at deadlines read from the Clock given.
//
// Commit marks: a connection lost during COMMIT (or during an autocommit
// write) leaves its outcome open. Every write therefore also upserts this
// session's row of skiff_commit_marks (instance, seq) with the write's
// number, in a CTE of a statement the write sends anyway, so statements per
// write do not grow and the table holds one row per store opened, never one
// per write. After a lost outcome CommitMarked reconnects, makes sure the old
// backend has ended (its transaction is then committed or aborted for good),
// and reads the row: our number means committed (OK), anything else means
// not applied (unavailable); when it cannot find out within call_timeout the
// answer is outcome_unknown. The mark is read by a statement that writes, so
// under synchronous replication a mark it finds is on the standby too.
//
// Failover: with a libpq multi-host URL and target_session_attrs=read-write
// a reconnect reaches whichever host is the primary now. Reconnects are
// paced and reported by a ReconnectGate (one warning per outage, one line
// when it ends); calls in between fail with unavailable. A commit whose
// wait for the synchronous standby was cancelled (SyncRepWatch) is answered
// outcome_unknown, never OK: it may not survive a failover.
//
// Instance guard: an exclusive store takes a session advisory lock keyed by
// the database and schema on every connection it opens, before serving.
// Failing to get it (another server holds it) fails the open, or, after a
// reconnect, the call, so a second owner is never silent. The lock ends with
// the session, so a killed server frees it at once. A cluster instance takes
// the same lock shared: cluster instances coexist, and the exclusive and the
// shared form refuse each other.
//
// Thread-safe: calls are serialised on one mutex, held while a body runs, so
// a body must not call back into the session (Count excepted).
#ifndef SKIFF_STORE_INTERNAL_PG_SESSION_H_
#define SKIFF_STORE_INTERNAL_PG_SESSION_H_

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>

#include <pqxx/pqxx>

#include "base/clock.h"
#include "base/logger.h"
#include "base/mutex.h"
#include "base/status.h"
#include "store/internal/pg_reconnect_gate.h"
#include "store/internal/pg_sync_rep_watch.h"
#include "store/internal/socket_deadline.h"
#include "store/store.h"

namespace skiff::store::internal {

// Maps a libpqxx exception to a Status; sets *broken when the connection
// cannot be used again.
Status PgStatusOf(const std::exception& e, bool* broken);

// A write's commit mark, as its body sees it: the two parameters the marked
// statement takes last, and the moment its commit goes out.
class CommitMark {
 public:
  const std::string& instance() const { return instance_; }
  const std::string& seq() const { return seq_text_; }
  // Call just before sending the statement that commits (the autocommit
  // write, or COMMIT): a connection lost after it leaves the outcome open.
  // A body that never calls it wrote nothing.
  void Sending() { sent_ = true; }

 private:
  friend class PgSession;
  CommitMark(const std::string& instance, uint64_t seq)
      : instance_(instance), seq_(seq), seq_text_(std::to_string(seq)) {}

  const std::string& instance_;
  const uint64_t seq_;
  const std::string seq_text_;
  bool sent_ = false;
};

class PgSession {
 public:
  // `url` is libpq's (internal::ParsePgUrl's); `options` are taken as given.
  // `clock` must outlive the session. Connects only in Open.
  PgSession(std::string url, const PostgresOptions& options, const Clock& clock);
  PgSession(const PgSession&) = delete;
  PgSession& operator=(const PgSession&) = delete;

  // Connects (schema, statements, instance lock), waiting for a server that
  // does not answer yet up to wait_for_server, then clears the commit marks
  // of stores long closed. unavailable when it cannot connect or the
  // instance lock is held elsewhere (naming the holder).
  Status Open();

  // Runs body(pqxx::connection&) on the connection, opening it first when
  // there is none, under the call deadline. OK when the body returned;
  // otherwise what it threw, mapped to a Status (the connection is dropped
  // when it was lost or timed out).
  template <typename Body>
  Status Run(Body&& body) SKIFF_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return RunLocked(body, nullptr);
  }

  // Runs a write: body(pqxx::connection&, CommitMark&) -> Status, sending
  // statements that carry the mark. A non-OK Status from the body says the
  // write was refused and nothing written; it is returned as it is. When the
  // connection is lost after CommitMark::Sending, the outcome is checked
  // (see above) before answering. Counts a transaction for every commit
  // that landed.
  template <typename Body>
  Status CommitMarked(Body&& body) SKIFF_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    SKIFF_RETURN_IF_ERROR(ConnectForCall());
    watch_->Reset();
    CommitMark mark(instance_, ++last_mark_);
    Status refused;
    bool lost = false;
    auto run = [&](pqxx::connection& conn) { refused = body(conn, mark); };
    Status s = RunLocked(run, &lost);
    return Settle(mark, std::move(s), lost, refused);
  }

  // Counts `n` statements sent (BEGIN and COMMIT included).
  void Count(uint64_t n) { statements_.fetch_add(n, std::memory_order_relaxed); }
  StoreCounters counters() const;

  const PostgresOptions& options() const { return options_; }

 private:
  // The backend a connection talks to: its pid and start time, which
  // together name it even after the pid is reused.
  struct Backend {
    int pid = 0;
    long long started_us = 0;
  };

  template <typename Body>
  Status RunLocked(Body& body, bool* lost) SKIFF_REQUIRES(mu_) {
    SKIFF_RETURN_IF_ERROR(ConnectForCall());
    deadline_.Arm(conn_->sock());
    Status s;
    bool broken = false;
    try {
      body(*conn_);
    } catch (const std::exception& e) {
      s = PgStatusOf(e, &broken);
    }
    return Finish(std::move(s), broken, lost);
  }

  // Ends a call: disarms the deadline, drops a lost connection, sets *lost.
  Status Finish(Status s, bool broken, bool* lost) SKIFF_REQUIRES(mu_);
  // CommitMarked's answer once its body ran (or threw).
  Status Settle(const CommitMark& mark, Status s, bool lost, const Status& refused)
      SKIFF_REQUIRES(mu_);
  Status CheckCommit(uint64_t mark, const Status& cause) SKIFF_REQUIRES(mu_);
  Status EnsureConnected() SKIFF_REQUIRES(mu_);
  // EnsureConnected for a call, paced and reported by gate_.
  Status ConnectForCall() SKIFF_REQUIRES(mu_);
  // Drops the connection (and its watch); the next call reconnects.
  void Drop() SKIFF_REQUIRES(mu_);
  // "host:port" of the connection, for the log.
  std::string Where() SKIFF_REQUIRES(mu_);
  void EndBackend(pqxx::connection& conn, const Backend& old);
  std::string GuardLockCall(const std::string& function) const;
  std::string GuardHolder(pqxx::connection& conn);

  const std::string url_;  // libpq's, without the store's parameters
  const PostgresOptions options_;
  const Clock& clock_;
  StderrLogger stderr_logger_{"skiff"};  // when options_.logger is null
  const std::string instance_;           // this session's row in skiff_commit_marks
  Mutex mu_;
  std::unique_ptr<pqxx::connection> conn_ SKIFF_GUARDED_BY(mu_);
  // url_, or with the host of a lost connection moved last (WithHostLast).
  std::string connect_url_ SKIFF_GUARDED_BY(mu_);
  // Set with conn_, and destroyed before it (declared after it).
  std::unique_ptr<SyncRepWatch> watch_ SKIFF_GUARDED_BY(mu_);
  ReconnectGate gate_ SKIFF_GUARDED_BY(mu_);
  Backend previous_ SKIFF_GUARDED_BY(mu_);          // of the last connection opened
  bool unreachable_ SKIFF_GUARDED_BY(mu_) = false;  // the last connect got no session
  uint64_t last_mark_ SKIFF_GUARDED_BY(mu_) = 0;    // number of the last write
  SocketDeadline deadline_;                         // one call at a time: under mu_
  std::atomic<uint64_t> statements_{0};
  std::atomic<uint64_t> transactions_{0};
};

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_PG_SESSION_H_
