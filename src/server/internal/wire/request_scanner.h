// ScanRequest: the fast path of DecodeRequest for the requests a busy
// connection sends most (ping, echo, get, has, set, delete, add, merge,
// logout).
//
// DecodeRequest parses the whole frame into a tree and then picks members
// out of it; for a get that tree is thrown away at once, and for an echo the
// data is parsed only to be written back. The scanner walks the frame once,
// validating it as strict JSON without building anything, and keeps the text
// of the value member (`Request::raw_value`) instead of a tree. Only merge
// and add parse that text, because they compute with it; set leaves
// `Request::value` null and the document in `raw_value`.
//
// Objects in text it accepts have no repeated member names, so that text
// means the same to every reader.
//
// It is deliberately narrow: anything unusual (escapes in names, \u escapes,
// long numbers, duplicate members, other ops, any invalid field) makes it
// return false, and the caller then runs DecodeRequest, which gives the
// error message. So `false` never means "bad request", and `true` means
// DecodeRequest would accept the frame with the same meaning
// (request_scanner_test checks both on mutated frames).
// Pure function; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_REQUEST_SCANNER_H_
#define SKIFF_SERVER_INTERNAL_WIRE_REQUEST_SCANNER_H_

#include <string>
#include <string_view>

#include "doc/document.h"
#include "server/internal/wire/request.h"

namespace skiff::server::internal {

// Fills `*r` (which must be default-constructed) and returns true when the
// fast path takes `text`; `r->raw_value` then points into `text`.
bool ScanRequest(std::string_view text, const doc::Limits& limits, Request* r);

// `json` (text ScanRequest validated) without whitespace outside strings.
std::string CompactJson(std::string_view json);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_REQUEST_SCANNER_H_
