// RequestHandler: executes v1 requests for the listener's connections.
//
// Decodes each frame (protocol.h), enforces the session and permission rules,
// runs the op against the DocumentCache and queues writes to the Committer;
// sync ops go to the SyncEngine (request_handler_sync.cc). Reads reply at
// once; writes reply when their transaction commits (commit durability) or
// once applied (memory durability); pushes after their commit; held waits
// when the engine answers them, posted to an I/O thread. Thread-safe: called from
// every I/O thread; per-connection calls are serial (see listener.h).
#ifndef SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_
#define SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/internal/committer.h"
#include "server/internal/document_cache.h"
#include "server/internal/listener.h"
#include "server/internal/protocol.h"
#include "server/server_options.h"
#include "store/store.h"
#include "sync/sync_engine.h"

namespace skiff::server::internal {

class RequestHandler final : public ListenerHandler {
 public:
  RequestHandler(const ServerOptions& options, store::Store& store, DocumentCache& cache,
                 Committer& committer, sync::SyncEngine& sync);

  // Where `stats` reads the listener's figures.
  void set_network_stats(std::function<ListenerStats()> stats) {
    network_stats_ = std::move(stats);
  }

  void OnText(const std::shared_ptr<Connection>& conn, std::string_view payload) override;
  void OnBinary(const std::shared_ptr<Connection>& conn) override;
  void OnClose(const std::shared_ptr<Connection>& conn) override;

  size_t sessions() const { return sessions_.load(std::memory_order_relaxed); }

 private:
  // Runs a decoded request; returns an error to send instead of a reply.
  Status Execute(const std::shared_ptr<Connection>& conn, Request& r);
  Status Login(Connection& conn, const Request& r);
  Status Logout(Connection& conn, const Request& r);
  Status Get(Connection& conn, const Request& r);
  Status Set(const std::shared_ptr<Connection>& conn, Request& r);
  Status Delete(const std::shared_ptr<Connection>& conn, const Request& r);
  Status Add(const std::shared_ptr<Connection>& conn, const Request& r);
  Status Merge(const std::shared_ptr<Connection>& conn, const Request& r);
  Status All(Connection& conn, const Request& r);
  Status Stats(Connection& conn, const Request& r);
  // Sync ops (request_handler_sync.cc).
  Status Push(const std::shared_ptr<Connection>& conn, Request& r);
  Status Pull(Connection& conn, const Request& r);
  Status Bootstrap(Connection& conn, const Request& r);
  Status Wait(const std::shared_ptr<Connection>& conn, const Request& r);
  // Cancels the held waits of a connection that closed.
  void CancelWaits(Connection& conn);

  // Queues a write of (table, key) to the committer. Call inside
  // DocumentCache::With so the store sees the key's writes in order. In
  // commit mode `value` is written and `reply` sent once it committed. In
  // memory mode the caller replies; `coalesce` (add, merge: changes that
  // often hit one hot key) has the committer read the document when it
  // writes it instead of taking `value`, so a key changed many times
  // between flushes is serialised and written once.
  void Persist(const std::shared_ptr<Connection>& conn, const Request& r, CachedDocument& doc,
               std::optional<std::string> value, const std::string& reply, bool coalesce = false);
  // The text an add or merge hands Persist: in memory mode none, since the
  // committer serialises the document when it writes it (and sets its
  // `bytes` then, so the hot tier's byte count lags by up to one flush
  // interval); in commit mode the document's JSON.
  std::optional<std::string> TextToPersist(const CachedDocument& doc) const;
  // In memory mode the reply of a write goes out now; in commit mode
  // Persist's callback sends it.
  void ReplyAfterWrite(Connection& conn, std::string_view reply);

  const ServerOptions options_;
  const doc::Limits limits_;
  store::Store& store_;
  DocumentCache& cache_;
  Committer& committer_;
  sync::SyncEngine& sync_;
  std::function<ListenerStats()> network_stats_;
  std::atomic<size_t> sessions_{0};
  std::atomic<uint64_t> adds_seen_{0};  // for options_.drop_one_add_in
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_REQUEST_HANDLER_H_
