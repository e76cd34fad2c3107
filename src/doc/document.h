// The document value and its limits: parsing JSON text from outside into a
// Value with depth and size checks, and dumping it back.
//
// A Value is nlohmann's JSON tree with its objects kept as FlatObject (one
// sorted vector of members, see flat_object.h) in place of std::map; faster or
// smaller internal forms (see pack.h) are chosen where a benchmark shows they
// pay. Functions here are
// pure and thread-safe; a Value itself is thread-compatible.
#ifndef SKIFF_DOC_DOCUMENT_H_
#define SKIFF_DOC_DOCUMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "doc/flat_object.h"

namespace skiff::doc {

using Value = nlohmann::basic_json<FlatObject>;

struct Limits {
  size_t max_depth = 64;                         // nesting of arrays and objects
  size_t max_document_bytes = 16 * 1024 * 1024;  // JSON text of one document
};

// For text from a trusted peer, such as the server's replies to a client:
// neither size nor depth is checked (nlohmann's parser keeps its own stack).
inline constexpr Limits kNoLimits{SIZE_MAX, SIZE_MAX};

// Parses `text` as one JSON value. Errors: bad_request for malformed JSON or
// invalid UTF-8 (the message gives the byte offset), too_large when the text or
// its nesting exceeds `limits`. Never throws, never recurses without bound.
// Each object and array is allocated once at its exact size, and an object's
// members are sorted once, so time stays O(n log n) in any key order. Where a
// key repeats in one object the last one stays.
Result<Value> Parse(std::string_view text, const Limits& limits = {});

// Compact JSON text of `value` (no spaces). Invalid UTF-8 inside strings is
// replaced with U+FFFD rather than thrown on.
std::string Dump(const Value& value);

// too_large when `value` nests deeper than `max_depth`; OK otherwise.
Status CheckDepth(const Value& value, size_t max_depth);

}  // namespace skiff::doc

#endif  // SKIFF_DOC_DOCUMENT_H_
