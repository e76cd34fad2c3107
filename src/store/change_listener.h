// ChangeListener: the notifications of one channel of a PostgreSQL database,
// on a connection of their own (LISTEN), for a cluster instance to learn of
// what other instances commit: sync commits (the sync engine's channel) or
// changes of watched tables (the watch channel).
//
// NOTIFY has no replay: a notification sent while the connection was down is
// gone. Wait therefore reports a new session (a reconnect, or a backend pid
// that changed under the library) so its caller can catch up from the store;
// callers also poll, since a notification the sender failed to send is gone
// too.
//
// Wait and the destructor run on one thread; Interrupt may be called from any
// thread at any time.
#ifndef SKIFF_STORE_CHANGE_LISTENER_H_
#define SKIFF_STORE_CHANGE_LISTENER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace skiff::store {

// The SQL expression naming the channel (one per database and schema, so
// servers on other schemas of the same database never wake each other).
inline constexpr const char* kSyncChannelSql =
    "'skiff_sync_' || md5(current_database() || '/' || current_schema())";
// The channel of cluster watch commits (Store::ReadWatchLog), named alike.
inline constexpr const char* kWatchChannelSql =
    "'skiff_watch_' || md5(current_database() || '/' || current_schema())";

class ChangeListener {
 public:
  struct Event {
    int notifications = 0;      // received during this Wait
    uint64_t last_sync_id = 0;  // the highest id or version their payloads named
    bool new_session = false;   // (re)connected: notifications may have been missed
  };

  // Connects to the store at `url` (a postgres:// store URL, its store
  // parameters allowed) and listens. unavailable when it cannot connect,
  // bad_request for a URL that is not PostgreSQL's.
  // `channel_sql` names the channel (kSyncChannelSql or kWatchChannelSql).
  static Result<std::unique_ptr<ChangeListener>> Open(const std::string& url,
                                                      const char* channel_sql = kSyncChannelSql);
  virtual ~ChangeListener() = default;

  // Returns at the first notification, at `timeout`, or at Interrupt(), with
  // what arrived. Reconnects first when the connection was lost (reporting
  // new_session); unavailable when that fails or the connection breaks.
  virtual Result<Event> Wait(std::chrono::milliseconds timeout) = 0;

  // Makes the current or next Wait return at once.
  virtual void Interrupt() = 0;
};

}  // namespace skiff::store

#endif  // SKIFF_STORE_CHANGE_LISTENER_H_
