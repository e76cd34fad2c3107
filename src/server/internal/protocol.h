// The v1 wire codec: turns one text frame into a validated Request and builds
// reply frames. Every field check of docs/protocol.md happens here, so the
// dispatcher only executes requests that are already well-formed.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_PROTOCOL_H_
#define SKIFF_SERVER_INTERNAL_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "doc/document.h"
#include "doc/path.h"
#include "server/internal/geo_index.h"
#include "store/store.h"
#include "sync/types.h"

namespace skiff::server::internal {

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
  // Sync (docs/sync.md); decoded by sync_codec.h.
  kPush,
  kPull,
  kBootstrap,
  kWait,
  // Geo (docs/geo.md).
  kNear
};

std::string_view OpName(Op op);

// True for ops that may run on a connection nobody has logged in on.
bool AllowedBeforeLogin(Op op);

struct Request {
  uint64_t id = 0;
  Op op = Op::kPing;
  std::string user;    // login
  std::string secret;  // login
  std::string table;   // get has set delete add merge all
  std::string key;     // get has set delete add merge
  std::string after;   // all; empty = from the first key
  size_t limit = 0;    // all
  doc::Path path;      // add
  doc::Value value;    // set: value; echo: data; merge: patch; add: delta
  // The JSON text of that member when ScanRequest decoded the request (for
  // echo, instead of `value`); points into the frame, so it is valid only
  // while the frame is being handled. Empty after DecodeRequest.
  std::string_view raw_value;
  // Sync ops.
  sync::PushRequest push;           // push
  uint64_t since = 0;               // pull wait
  store::SyncRowCursor sync_after;  // bootstrap; empty group = from the start
  uint64_t timeout_ms = 0;          // wait
  // near: the query (its ranges are checked by GeoIndex::CheckQuery),
  // whether each item carries its document, and whether the answer comes as
  // parallel arrays (keys, dist_m, values) instead of one object per item.
  GeoQuery geo;
  bool values = false;
  bool columns = false;
};

// Decodes one request frame. On error, `*id` holds the request id when the
// frame got far enough to have one (nullopt otherwise) so the error reply can
// carry it. Errors: bad_request (malformed JSON, invalid UTF-8, not an object,
// missing or wrong-typed field, unknown op, bad table or key), too_large
// (nesting deeper than `limits.max_depth`, key over 1 KiB).
Result<Request> DecodeRequest(std::string_view text, const doc::Limits& limits,
                              std::optional<uint64_t>* id);

// {"id":N,"ok":true} plus the members of `fields` (an object or null).
std::string EncodeOk(uint64_t id, const doc::Value& fields = doc::Value());
// {"id":N,"ok":true,"data":...} with `data` already JSON text (echo's fast path).
std::string EncodeOkRaw(uint64_t id, std::string_view member, std::string_view json_text);
// The same, appended to `out`; `json_text` empty gives {"id":N,"ok":true}.
void AppendOkRaw(std::string& out, uint64_t id, std::string_view member,
                 std::string_view json_text);
// {"id":N|null,"ok":false,"error":{"code":"...","message":"..."}}.
std::string EncodeError(std::optional<uint64_t> id, const Status& status);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_PROTOCOL_H_
