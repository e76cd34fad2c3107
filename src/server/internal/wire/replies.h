// The reply encoder of the v1 wire protocol: every reply frame the server
// sends is written by a function of this folder, so its bytes are decided
// in one room (docs/protocol.md). This header has the replies every op may
// give (ok, error) and those of the document ops; near_reply.h,
// stats_reply.h and sync_replies.h have the larger ones.
//
// The Append* forms write into a buffer the caller reuses (the request
// handler's per-thread reply buffer), so a common reply costs no allocation
// of its own; the Encode* forms return a new string.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_REPLIES_H_
#define SKIFF_SERVER_INTERNAL_WIRE_REPLIES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "doc/document.h"
#include "server/internal/cached_document.h"
#include "server/internal/wire/request.h"
#include "store/store.h"

namespace skiff::server::internal {

// {"id":N,"ok":true} plus the members of `fields` (an object or null).
std::string EncodeOk(uint64_t id, const doc::Value& fields = doc::Value());
// {"id":N,"ok":true}: ping, set, merge, login, logout.
void AppendOk(std::string& out, uint64_t id);
// {"id":N,"ok":true,"member":json_text} with `json_text` JSON already.
std::string EncodeOkRaw(uint64_t id, std::string_view member, std::string_view json_text);
// The same, appended to `out`; `json_text` empty gives {"id":N,"ok":true}.
void AppendOkRaw(std::string& out, uint64_t id, std::string_view member,
                 std::string_view json_text);
// {"id":N|null,"ok":false,"error":{"code":"...","message":"..."}}.
std::string EncodeError(std::optional<uint64_t> id, const Status& status);
// A rate_limited error: EncodeError's object with `retry_after_ms`, the
// wait before the same request may succeed.
std::string EncodeRateLimited(std::optional<uint64_t> id, const std::string& message,
                              uint64_t retry_after_ms);

// echo: the data back as sent when the scanner kept its text (the client's
// own whitespace), else the decoded tree serialised.
void AppendEchoReply(std::string& out, const Request& r);
// get and has: whether `d` exists, and for get its document.
void AppendReadReply(std::string& out, uint64_t id, bool with_value, const CachedDocument& d);
// delete: `found` only for a user who may read the table (nullopt
// otherwise: a write-only user is not told whether it existed).
void AppendDeleteReply(std::string& out, uint64_t id, std::optional<bool> found);
// add: the new number, or no value for a user who may not read the table
// (`sum` null).
void AppendAddReply(std::string& out, uint64_t id, const doc::Value* sum);
// all: one page of a scan, `items` and `next`.
std::string EncodeAllReply(uint64_t id, const store::ScanPage& page);

// Appends a document's JSON text: as it is for the text form, serialised
// for a tree; nothing for an absent one.
void AppendDocument(std::string& out, const CachedDocument& d);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_REPLIES_H_
