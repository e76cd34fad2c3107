#include "store/internal/pg_session.h"

#include <algorithm>
#include <optional>
#include <random>
#include <thread>

#include "store/internal/pg_schema.h"
#include "store/internal/pg_url.h"

namespace skiff::store::internal {
namespace {

// Key class of the instance guard's advisory lock (two-int form, so it can
// never meet the one-bigint schema lock).
constexpr int kGuardClass = 7283515;
constexpr const char* kGuardKey = "hashtext(current_database() || '/' || current_schema())";

std::string Text(const pqxx::field& f) { return std::string(f.c_str(), f.size()); }

// 128 random bits as hex: names this session's commit mark row.
std::string RandomInstanceId() {
  std::random_device entropy;
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    uint32_t word = entropy();
    for (int j = 0; j < 8; ++j, word >>= 4) out += kHex[word & 15];
  }
  return out;
}

// Runs one statement on `conn` under the deadline, reading its rows.
pqxx::result Exec(pqxx::connection& conn, const std::string& sql) {
  pqxx::nontransaction tx(conn);
  return tx.exec(sql);
}

}  // namespace

Status PgStatusOf(const std::exception& e, bool* broken) {
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    *broken = true;
    return Unavailable(std::string("PostgreSQL connection lost: ") + e.what());
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string state = sql->sqlstate();
    const std::string cls = state.substr(0, 2);
    // 57014: statement_timeout (or a cancel); 55P03: lock_timeout. The
    // connection is fine; the statement was refused.
    if (state == "57014" || state == "55P03") {
      return Unavailable("PostgreSQL timed out (" + state + "): " + e.what());
    }
    // 25006: a write on a server that is (now) a standby. The primary is
    // elsewhere: a new connection finds it (target_session_attrs).
    if (state == "25006") {
      *broken = true;
      return Unavailable("PostgreSQL server is read-only (a standby): " + std::string(e.what()));
    }
    if (cls == "08" || cls == "57" || cls == "53" || cls == "40") {
      *broken = cls != "40";
      return Unavailable("PostgreSQL unavailable (" + state + "): " + e.what());
    }
    if (cls == "22") return BadRequest("PostgreSQL rejected a value (" + state + "): " + e.what());
    return Internal("PostgreSQL error (" + state + "): " + e.what());
  }
  return Internal(std::string("PostgreSQL client error: ") + e.what());
}

PgSession::PgSession(std::string url, const PostgresOptions& options, const Clock& clock)
    : url_(std::move(url)),
      options_(options),
      clock_(clock),
      instance_(RandomInstanceId()),
      connect_url_(url_),
      gate_(clock, options.logger != nullptr ? *options.logger : stderr_logger_),
      deadline_(options.call_timeout, clock) {}

Status PgSession::Open() {
  MutexLock lock(&mu_);
  const Clock::TimePoint give_up = clock_.Now() + options_.wait_for_server;
  auto backoff = std::chrono::milliseconds(100);
  for (;;) {
    Status s = EnsureConnected();
    if (s.ok()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - clock_.Now());
    // Only an unreachable server is waited for: a refusal (the instance
    // lock, a bad schema) will not go away by waiting.
    if (!unreachable_ || left.count() <= 0) return s;
    if (options_.on_wait) options_.on_wait(s, left);
    std::this_thread::sleep_for(std::min(backoff, left));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
  // Marks of stores long closed; a live store's row is rewritten by its
  // next write anyway. One statement per open.
  auto clear = [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    Count(1);
    tx.exec("DELETE FROM skiff_commit_marks WHERE at < now() - interval '7 days'");
  };
  return RunLocked(clear, nullptr);
}

StoreCounters PgSession::counters() const {
  return {statements_.load(std::memory_order_relaxed),
          transactions_.load(std::memory_order_relaxed)};
}

Status PgSession::Finish(Status s, bool broken, bool* lost) {
  if (deadline_.Disarm() && !s.ok()) {
    broken = true;
    s = Unavailable("PostgreSQL did not answer within call_timeout_ms=" +
                    std::to_string(options_.call_timeout.count()));
  }
  if (!s.ok() && (broken || !conn_->is_open())) {
    broken = true;
    gate_.Lost(s);
    // The next call opens a new one, trying the other hosts of a multi-host
    // URL first: a frozen primary would take a whole connect_timeout.
    if (conn_) {
      const char* host = conn_->hostname();
      const char* port = conn_->port();
      connect_url_ = WithHostLast(url_, host != nullptr ? host : "", port != nullptr ? port : "");
    }
    Drop();
  }
  if (lost != nullptr) *lost = broken;
  return s;
}

Status PgSession::Settle(const CommitMark& mark, Status s, bool lost, const Status& refused) {
  if (!refused.ok()) return refused;
  if (s.ok()) {
    if (!mark.sent_) return s;
    if (watch_ != nullptr && watch_->cancelled()) {
      return OutcomeUnknown(
          "PostgreSQL committed on the primary but did not confirm the commit on its "
          "synchronous standby (" +
          watch_->message() + "): a failover may lose it");
    }
    transactions_.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  // Lost before the commit was sent: the server never got a COMMIT (or the
  // statement), so the transaction cannot have committed.
  if (!lost || !mark.sent_) return s;
  Status checked = CheckCommit(mark.seq_, s);
  if (checked.ok()) transactions_.fetch_add(1, std::memory_order_relaxed);
  return checked;
}

// After a connection was lost with write `mark`'s commit sent: reconnects
// (EnsureConnected waits for the old backend to end) and reads this
// session's mark. `cause` is the error the write met.
Status PgSession::CheckCommit(uint64_t mark, const Status& cause) {
  const Clock::TimePoint give_up = clock_.Now() + options_.call_timeout;
  Status connected;
  for (;;) {
    connected = EnsureConnected();
    if (connected.ok() || clock_.Now() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!connected.ok()) {
    gate_.Failed(connected, unreachable_);
    return OutcomeUnknown("PostgreSQL connection lost at commit (" + cause.message() +
                          "), and the check of its outcome failed: " + connected.message());
  }
  gate_.Connected(Where());
  watch_->Reset();
  std::optional<uint64_t> stored;
  auto read_mark = [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    Count(1);
    pqxx::result r = tx.exec_prepared("commit_mark", instance_);
    if (!r.empty()) stored = r[0][0].as<uint64_t>();
  };
  Status read = RunLocked(read_mark, nullptr);
  if (read.ok() && watch_ != nullptr && watch_->cancelled()) {
    read = Unavailable("the synchronous standby did not confirm it (" + watch_->message() + ")");
  }
  if (!read.ok()) {
    return OutcomeUnknown("PostgreSQL connection lost at commit (" + cause.message() +
                          "), and the check of its outcome failed: " + read.message());
  }
  if (stored == mark) return Status::Ok();  // it committed; only the answer was lost
  return Unavailable("PostgreSQL connection lost at commit (" + cause.message() +
                     "); checked after reconnecting: nothing was applied");
}

// Waits (bounded by the deadline of the call) until `old` is no longer a
// live backend, asking it to end once. Until then its transaction may still
// commit, and it may still hold the instance lock.
void PgSession::EndBackend(pqxx::connection& conn, const Backend& old) {
  const std::string where = " FROM pg_stat_activity WHERE pid = " + std::to_string(old.pid) +
                            " AND (extract(epoch FROM backend_start) * 1000000)::bigint = " +
                            std::to_string(old.started_us);
  Count(1);
  if (Exec(conn, "SELECT 1" + where).empty()) return;
  try {
    Count(1);
    Exec(conn, "SELECT pg_terminate_backend(pid)" + where);
  } catch (const pqxx::sql_error&) {
    // Not allowed to end it (another role): wait for it to end by itself.
  }
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Count(1);
  } while (!Exec(conn, "SELECT 1" + where).empty());
}

// Opens the connection when there is none: deadlines, schema, statements,
// the end of the previous backend, the instance lock. unavailable when any
// of it fails, the lock included.
Status PgSession::EnsureConnected() {
  if (conn_ && conn_->is_open()) return Status::Ok();
  Drop();
  std::unique_ptr<pqxx::connection> conn;
  unreachable_ = false;
  try {
    conn = std::make_unique<pqxx::connection>(connect_url_);  // bounded by connect_timeout
  } catch (const std::exception& e) {
    bool broken = false;
    Status s = PgStatusOf(e, &broken);
    unreachable_ = broken;
    return Unavailable("cannot open PostgreSQL store: " + s.message());
  }
  // libpqxx 6 would otherwise reopen a broken connection silently, as a
  // new session without our lock, settings or statements.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  conn->inhibit_reactivation(true);
#pragma GCC diagnostic pop
  deadline_.Arm(conn->sock());
  Status s;
  Backend backend;
  try {
    {
      pqxx::work tx(*conn);
      // The deadlines after the schema: its lock may wait for another
      // store creating the same schema (the call deadline bounds that).
      tx.exec(std::string(kPgSchemaSql) +
              "SET statement_timeout = " + std::to_string(options_.statement_timeout.count()) +
              "; SET lock_timeout = " + std::to_string(options_.lock_timeout.count()) + ";");
      tx.commit();
    }
    Count(kPgSchemaStatements + 4);  // BEGIN, the two SETs, the schema, COMMIT
    PreparePgStatements(*conn);
    if (previous_.pid != 0) EndBackend(*conn, previous_);
    Count(1);
    pqxx::result r = Exec(
        *conn,
        std::string("SELECT ") +
            (options_.exclusive ? GuardLockCall("pg_try_advisory_lock") : std::string("true")) +
            ", pg_backend_pid(), (extract(epoch FROM backend_start) * 1000000)::bigint "
            "FROM pg_stat_activity WHERE pid = pg_backend_pid()");
    backend.pid = r[0][1].as<int>();
    backend.started_us = r[0][2].as<long long>();
    if (!r[0][0].as<bool>()) {
      // Held. A server killed a moment ago still holds it until its
      // backend sees the closed socket and exits, which takes
      // milliseconds: wait for it, up to lock_timeout. A server that is
      // alive keeps it, and the wait fails with 55P03.
      try {
        Count(1);
        Exec(*conn, "SELECT " + GuardLockCall("pg_advisory_lock"));
      } catch (const pqxx::sql_error& e) {
        if (e.sqlstate() != "55P03") throw;
        s = Unavailable(GuardHolder(*conn));
      }
    }
  } catch (const std::exception& e) {
    bool broken = false;
    s = PgStatusOf(e, &broken);
  }
  if (deadline_.Disarm()) {
    s = Unavailable("PostgreSQL did not answer within call_timeout_ms=" +
                    std::to_string(options_.call_timeout.count()));
  }
  if (!s.ok()) return Unavailable("cannot open PostgreSQL store: " + s.message());
  conn_ = std::move(conn);
  watch_ = std::make_unique<SyncRepWatch>(*conn_);
  previous_ = backend;
  return Status::Ok();
}

Status PgSession::ConnectForCall() {
  if (conn_ && conn_->is_open()) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(gate_.MayTry());
  Status s = EnsureConnected();
  if (s.ok()) {
    gate_.Connected(Where());
  } else {
    gate_.Failed(s, unreachable_);
  }
  return s;
}

void PgSession::Drop() {
  watch_.reset();
  conn_.reset();
}

std::string PgSession::Where() {
  if (!conn_) return "(no connection)";
  const char* host = conn_->hostname();
  const char* port = conn_->port();
  return std::string(host != nullptr ? host : "?") + ":" + (port != nullptr ? port : "?");
}

// The call that takes the instance lock, `function` being one of
// pg_[try_]advisory_lock: its _shared form for a cluster instance.
std::string PgSession::GuardLockCall(const std::string& function) const {
  return function + (options_.cluster ? "_shared(" : "(") + std::to_string(kGuardClass) + ", " +
         kGuardKey + ")";
}

// Who holds the instance lock, for the message of a refused open.
std::string PgSession::GuardHolder(pqxx::connection& conn) {
  std::string holder = "another session";
  size_t holders = 0;
  bool shared = false;  // the holders are cluster instances
  try {
    Count(1);
    pqxx::result r =
        Exec(conn,
             "SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), "
             "'local socket'), l.mode = 'ShareLock' FROM pg_locks l JOIN pg_stat_activity a "
             "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = " +
                 std::to_string(kGuardClass) + " AND l.objid = " + kGuardKey +
                 "::oid AND l.database = (SELECT oid FROM pg_database "
                 "WHERE datname = current_database()) ORDER BY a.pid");
    if (!r.empty()) {
      holder = "PostgreSQL backend " + Text(r[0][0]) + " (application '" + Text(r[0][1]) +
               "', client " + Text(r[0][2]) + ")";
      holders = r.size();
      shared = r[0][3].as<bool>();
    }
  } catch (const std::exception&) {
    // The refusal stands; only its detail is lost.
  }
  if (holders > 0 && shared && !options_.cluster) {
    return "the database is in use by servers in cluster mode: " + holder +
           (holders > 1 ? " and " + std::to_string(holders - 1) + " more" : std::string()) +
           " hold its instance lock shared; a server not in cluster mode cannot run beside "
           "them (start it in cluster mode, or stop them first)";
  }
  if (holders > 0 && !shared && options_.cluster) {
    return "the database is in use by a server not in cluster mode: " + holder +
           " holds its instance lock; a server in cluster mode cannot run beside it (stop it, "
           "or restart it in cluster mode)";
  }
  return "the database is in use by another server: " + holder +
         " holds its instance lock; run one skiffd per database (or stop the other first)";
}

}  // namespace skiff::store::internal
