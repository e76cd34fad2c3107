// WatchRegistry: the watches of one Client, kept on its first connection:
// routes events (which carry no request id) to their callbacks by the
// server's watch number, remembers the last version each saw, and opens
// them again with `since` after a reconnect or an overflow.
// Thread-safe (mu_); callbacks run on the I/O thread without mu_ held.
#ifndef SKIFF_CLIENT_INTERNAL_WATCH_REGISTRY_H_
#define SKIFF_CLIENT_INTERNAL_WATCH_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "base/status.h"
#include "client/client.h"
#include "client/internal/pooled_connection.h"
#include "doc/document.h"

namespace skiff::client::internal {

class WatchRegistry : public std::enable_shared_from_this<WatchRegistry> {
 public:
  explicit WatchRegistry(PooledConnection& conn) : conn_(conn) {}

  // Opens a watch and waits for its reply: its handle, or the error.
  Result<uint64_t> Open(std::string table, const WatchTarget& target, WatchCallback on_event);
  // Ends it; bad_request for an unknown handle.
  Status Close(uint64_t handle);

  // The connection's events and reconnections (I/O thread).
  void OnEvent(const doc::Value& event);
  void OnReconnected();

 private:
  struct Entry {
    std::string table;
    WatchTarget target;
    WatchCallback on_event;
    uint64_t server_id = 0;  // 0 while not open on the server
    uint64_t version = 0;    // the last one seen (0: none yet)
  };
  // The watch request of an entry, resuming after its version.
  static std::string RequestFor(const Entry& e);
  // Sends it (without mu_: a failed connection answers at once); the reply
  // goes to `done` (when set) after the entry learned its number.
  void Send(uint64_t handle, std::string request, std::function<void(Status)> done);

  PooledConnection& conn_;
  Mutex mu_;
  std::map<uint64_t, Entry> entries_ SKIFF_GUARDED_BY(mu_);
  std::unordered_map<uint64_t, uint64_t> by_server_ SKIFF_GUARDED_BY(mu_);  // -> handle
  uint64_t next_handle_ SKIFF_GUARDED_BY(mu_) = 0;
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_WATCH_REGISTRY_H_
