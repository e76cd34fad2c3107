// The request decoder of the v1 wire protocol: one text frame in, a
// checked Request out, every error worded for the client.
//
// DecodeFrame is the one entry: the scanner's fast path
// (request_scanner.h) takes the common requests without building a tree,
// and the full decoder takes the rest, walking the op's row of the field
// table (request_fields.h). Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_REQUEST_DECODER_H_
#define SKIFF_SERVER_INTERNAL_WIRE_REQUEST_DECODER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "doc/document.h"
#include "server/internal/wire/request.h"

namespace skiff::server::internal {

// Decodes one request frame into `*r` (default-constructed). On success
// `r->raw_value` may point into `text`, so `text` must outlive the use of
// it. On error `*id` holds the request id when the frame got far enough to
// have one (nullopt otherwise), so the error reply can carry it. Errors as
// DecodeRequest's.
Status DecodeFrame(std::string_view text, const doc::Limits& limits, Request* r,
                   std::optional<uint64_t>* id);

// The full decoder alone. Errors: bad_request (malformed JSON, invalid
// UTF-8, not an object, missing or wrong-typed field, unknown op, bad table
// or key), too_large (nesting deeper than `limits.max_depth`, key over
// 1 KiB, a path too long for the depth limit).
Result<Request> DecodeRequest(std::string_view text, const doc::Limits& limits,
                              std::optional<uint64_t>* id);

// The document a set stores, as compact JSON text: the text the scanner
// kept, without its whitespace, or the tree the full decoder read,
// serialised.
std::string SetDocumentText(const Request& r);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_REQUEST_DECODER_H_
