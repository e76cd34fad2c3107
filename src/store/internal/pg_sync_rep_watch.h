// SyncRepWatch: notices whether PostgreSQL gave up waiting for a
// synchronous standby on a commit of this connection.
//
// With synchronous replication a commit is acknowledged once the standby has
// it, so it survives the primary's loss. When that wait is cancelled (a
// cancel, statement_timeout, the backend being terminated), PostgreSQL still
// reports the commit as done, with only a WARNING ("canceling wait for
// synchronous replication ..."): the transaction is committed on the
// primary alone and a failover may lose it. PgSession therefore never
// answers such a commit with OK.
//
// Registered on one connection for its life (destroy it before the
// connection). Not thread-safe: used under PgSession's mutex, on the thread
// of the call whose notices it sees.
#ifndef SKIFF_STORE_INTERNAL_PG_SYNC_REP_WATCH_H_
#define SKIFF_STORE_INTERNAL_PG_SYNC_REP_WATCH_H_

#include <cstring>
#include <string>

#include <pqxx/pqxx>

namespace skiff::store::internal {

class SyncRepWatch final : public pqxx::errorhandler {
 public:
  explicit SyncRepWatch(pqxx::connection_base& conn) : pqxx::errorhandler(conn) {}

  // Passes every message on to older handlers; remembers the first one about
  // the synchronous replication wait since the last Reset.
  bool operator()(const char msg[]) noexcept override {
    if (!cancelled_ && std::strstr(msg, "synchronous replication") != nullptr) {
      cancelled_ = true;
      try {
        message_ = msg;
        while (!message_.empty() && message_.back() == '\n') message_.pop_back();
      } catch (...) {
        // The flag is what matters; the text only explains it.
      }
    }
    return true;
  }

  void Reset() {
    cancelled_ = false;
    message_.clear();
  }
  bool cancelled() const { return cancelled_; }
  const std::string& message() const { return message_; }

 private:
  bool cancelled_ = false;
  std::string message_;
};

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_PG_SYNC_REP_WATCH_H_
