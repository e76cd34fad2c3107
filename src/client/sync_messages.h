// The sync ops' requests and replies as C++ values (docs/protocol.md: push,
// pull, bootstrap, wait), and the one place that writes and reads them as
// JSON. Client's typed calls (client.h) use these; so may code that speaks
// the wire over sockets of its own (a benchmark's fleet of raw connections).
//
// Rows are named by (group, table, key) and carry their values as JSON
// text: a device keeps rows as text, and sending or keeping the text spares
// building a tree per row. Thread-safe (no state).
#ifndef SKIFF_CLIENT_SYNC_MESSAGES_H_
#define SKIFF_CLIENT_SYNC_MESSAGES_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "doc/document.h"

namespace skiff::client {

struct RowName {
  std::string group;
  std::string table;
  std::string key;
  friend bool operator==(const RowName&, const RowName&) = default;
  friend auto operator<=>(const RowName&, const RowName&) = default;
};

// A change a device made: the new value, or nullopt for a delete.
struct SyncChange {
  uint64_t seq = 0;  // strictly increasing per device
  RowName name;
  std::optional<std::string> value;  // JSON text, sent as it is
};

// A change to a row the server sent: a value, or nullopt for a delete.
struct RowWrite {
  RowName name;
  std::optional<std::string> value;  // JSON text
};

// The request views its fields: they must live until the call that takes it
// returns (it is written out before then).
struct PushRequest {
  std::string_view device;
  std::span<const SyncChange> changes;
};
struct PushReply {
  uint64_t applied = 0;   // changes new to the server
  uint64_t last_seq = 0;  // the device's highest seq the server has
  uint64_t cursor = 0;
};

struct PullRequest {
  uint64_t since = 0;
  size_t limit = 0;  // 0: the server's default
};
struct PullReply {
  std::vector<RowWrite> changes;  // values as the tree's compact text
  uint64_t cursor = 0;
  bool more = false;  // pull again at once
};

struct BootstrapRequest {
  std::optional<RowName> after = std::nullopt;  // nullopt: the first page
  size_t limit = 0;                             // 0: the server's default
};
struct BootstrapPage {
  std::vector<RowWrite> rows;  // in the server's (group, table, key) order; values as sent
  uint64_t cursor = 0;
  std::optional<RowName> next;  // nullopt on the last page
};

struct WaitRequest {
  uint64_t since = 0;
  std::optional<std::chrono::milliseconds> timeout = std::nullopt;  // nullopt: the server's default
};
struct WaitReply {
  bool changed = false;
  uint64_t cursor = 0;
};

// A request's JSON text. With `id` 0 it has no "id" member (a Client adds
// its own); otherwise "id" comes first, for callers that speak the wire
// themselves.
std::string EncodeRequest(const PushRequest& request, uint64_t id = 0);
std::string EncodeRequest(const PullRequest& request, uint64_t id = 0);
std::string EncodeRequest(const BootstrapRequest& request, uint64_t id = 0);
std::string EncodeRequest(const WaitRequest& request, uint64_t id = 0);

// A successful reply object, read. internal when a member is missing or of
// the wrong type.
Result<PushReply> DecodePushReply(const doc::Value& reply);
Result<PullReply> DecodePullReply(const doc::Value& reply);
Result<WaitReply> DecodeWaitReply(const doc::Value& reply);
// Bootstrap pages are large, so they are read from the reply's text without
// a tree (internal/bootstrap_page.h); `on_next` runs with the page's `next`
// when the text gives it before the rows, so the caller may ask for the
// following page while this one is read.
using OnNextPage = std::function<void(const std::optional<RowName>& next)>;
Result<BootstrapPage> DecodeBootstrapReply(std::string_view reply, const OnNextPage& on_next = {});

}  // namespace skiff::client

#endif  // SKIFF_CLIENT_SYNC_MESSAGES_H_
