// The sync engine's requests and replies, as the protocol carries them
// (docs/sync.md). Plain values; thread-compatible.
#ifndef SKIFF_SYNC_TYPES_H_
#define SKIFF_SYNC_TYPES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace skiff::sync {

// Who is asking: a logged-in user and the groups they belong to (read at
// login, shared by every request of the connection).
struct Caller {
  std::string user;
  std::shared_ptr<const std::vector<std::string>> groups;
  bool InGroup(const std::string& group) const;
};

// One entry of a device's outbox.
struct PushChange {
  uint64_t seq = 0;  // the device's sequence number; strictly increasing
  std::string table;
  std::string key;
  std::string group;
  std::optional<std::string> value;  // JSON text; nullopt deletes the row
};

struct PushRequest {
  std::string device;
  std::vector<PushChange> changes;
};

struct PushReply {
  uint64_t applied = 0;   // changes newly applied (retried ones are skipped)
  uint64_t last_seq = 0;  // the device's highest applied sequence number
  uint64_t cursor = 0;    // the committed sync id after this push
};

struct PullReply {
  std::vector<store::Change> changes;  // in sync-id order
  uint64_t cursor = 0;                 // pass as `since` next time
  bool more = false;                   // pull again at once: a page was full
};

struct BootstrapReply {
  std::vector<store::SyncRow> rows;
  uint64_t cursor = 0;  // the committed sync id read before this page
  std::optional<store::SyncRowCursor> next;
};

struct WaitReply {
  bool changed = false;  // false: the wait timed out
  uint64_t cursor = 0;
};

}  // namespace skiff::sync

#endif  // SKIFF_SYNC_TYPES_H_
