// Request: one client request of the v1 wire protocol (docs/protocol.md),
// as the decoder (request_decoder.h) hands it to the request handler: the
// op and its fields, already checked for presence and type.
// A plain value; thread-compatible.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_REQUEST_H_
#define SKIFF_SERVER_INTERNAL_WIRE_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "doc/document.h"
#include "doc/path.h"
#include "geo/query.h"
#include "store/store.h"
#include "sync/types.h"

namespace skiff::server::internal {

// In the order of the field table (request_fields.cc) and the handler's op
// table, which both check it.
enum class Op {
  kLogin,
  kLogout,
  kPing,
  kEcho,
  kGet,
  kHas,
  kSet,
  kDelete,
  kAdd,
  kMerge,
  kAll,
  kStats,
  // Sync (docs/sync.md).
  kPush,
  kPull,
  kBootstrap,
  kWait,
  // Geo (docs/geo.md).
  kNear,
  // Live values (docs/protocol.md, "watch / unwatch").
  kWatch,
  kUnwatch
};
inline constexpr size_t kOpCount = static_cast<size_t>(Op::kUnwatch) + 1;

struct Request {
  uint64_t id = 0;
  Op op = Op::kPing;
  std::string user;    // login
  std::string secret;  // login
  std::string token;   // login (a JWT, instead of user and secret)
  std::string table;   // get has set delete add merge all near
  std::string key;     // get has set delete add merge
  std::string after;   // all; empty = from the first key
  size_t limit = 0;    // all pull bootstrap
  doc::Path path;      // add
  doc::Value value;    // set: value; echo: data; merge: patch; add: delta
  // The JSON text of that member when ScanRequest decoded the request (for
  // echo and set, instead of `value`); points into the frame, so it is
  // valid only while the frame is being handled. Empty after DecodeRequest.
  std::string_view raw_value;
  // Sync ops.
  sync::PushRequest push;           // push
  uint64_t since = 0;               // pull wait
  store::SyncRowCursor sync_after;  // bootstrap; empty group = from the start
  uint64_t timeout_ms = 0;          // wait
  // near: the query (its ranges are checked by geo::CheckQuery on every
  // query), whether each item carries its document, and whether the answer
  // comes as parallel arrays (keys, dist_m, values) instead of one object
  // per item.
  skiff::geo::GeoQuery geo;
  bool values = false;
  bool columns = false;
  // Not from the wire: set by a caller that runs near for a subset of the
  // table's keys (the cluster router, for the partitions a peer asked this
  // instance to answer for). Used only while the index is searched, on the
  // I/O thread; the caller's filter outlives that.
  const skiff::geo::KeyFilter* near_keys = nullptr;
  // watch: a key prefix (instead of `key`), whether the current values come
  // first; its `since` is the field above. unwatch: the watch's number.
  std::string prefix;
  bool initial = false;
  uint64_t watch = 0;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_REQUEST_H_
