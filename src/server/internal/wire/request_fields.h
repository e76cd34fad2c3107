// The field table of the v1 wire protocol: for every op, its name and the
// request fields it takes, each with its type and whether it is required,
// in the order they are checked (so the first error named is the same on
// every run). The full decoder (request_decoder.cc) walks these rows; the
// docs' op table (docs/protocol.md, "Operations") says the same in prose.
//
// Fields a row does not list are ignored, so newer clients can send extras
// to older servers. An optional field given as null is as if absent (but
// `path`, whose null is a wrong type); a required unsigned integer given as
// null is missing.
// Constant data; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_REQUEST_FIELDS_H_
#define SKIFF_SERVER_INTERNAL_WIRE_REQUEST_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "server/internal/wire/request.h"

namespace skiff::server::internal {

// Default page size of pull and bootstrap when the request names none.
inline constexpr size_t kDefaultSyncPage = 1000;
// Default hold of a wait without timeout_ms.
inline constexpr uint64_t kDefaultWaitMs = 30000;

// What a field's value must be.
enum class FieldType : uint8_t {
  kString,     // a string
  kTableName,  // a string naming a table (doc::ValidateTableName)
  kKey,        // a string naming a document (doc::ValidateKey)
  kJson,       // any JSON value, null included
  kNumber,     // a number
  kUnsigned,   // an unsigned 64-bit integer
  kBool,       // true or false
  kPath,       // an array of strings
  kScanLimit,  // all's page: an integer from 1 to store::kMaxScanLimit
  kNearLimit,  // near's answer: an integer from 1 to geo::kMaxLimit
  kSyncLimit,  // pull's and bootstrap's page: an unsigned integer, at least 1
  kScanAfter,  // all's `after`: a key, or null
  kSyncAfter,  // bootstrap's `after`: [group, table, key], or null
  kBox,        // near's `box_m`: [width, height], two numbers
  kChanges,    // push's `changes`: an array of change objects
};

enum class Presence : uint8_t { kRequired, kOptional };

// Where a decoded field goes in the Request.
enum class Slot : uint8_t {
  kUser,
  kSecret,
  kToken,
  kTable,
  kKey,
  kValue,  // Request::value: set's value, echo's data, merge's patch, add's delta
  kPath,
  kAfter,
  kLimit,
  kDevice,
  kChanges,
  kSince,
  kSyncAfter,
  kTimeoutMs,
  kLat,
  kLon,
  kNearLimit,
  kRadius,
  kBox,
  kValues,
  kColumns,
  kPrefix,
  kInitial,
  kWatch,
  // An element of push's `changes` (sync::PushChange).
  kSeq,
  kGroup,
};

struct FieldSpec {
  const char* name;  // a literal: the JSON library looks members up by C string
  FieldType type;
  Presence presence;
  Slot slot;
};

struct OpSpec {
  std::string_view name;
  Op op;
  std::span<const FieldSpec> fields;
};

// Every op, in the order of the Op enum.
std::span<const OpSpec> OpSpecs();
const OpSpec& SpecOf(Op op);
// nullptr for a name that is no op.
const OpSpec* FindOp(std::string_view name);
std::string_view OpName(Op op);

// The fields of each element of push's `changes`, checked in this order.
std::span<const FieldSpec> PushChangeFields();

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_REQUEST_FIELDS_H_
