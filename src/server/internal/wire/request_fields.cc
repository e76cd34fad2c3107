#include "server/internal/wire/request_fields.h"

#include <array>

#include "base/check.h"

namespace skiff::server::internal {
namespace {

using enum FieldType;
constexpr Presence kRequired = Presence::kRequired;
constexpr Presence kOptional = Presence::kOptional;

constexpr FieldSpec kTableField{"table", kTableName, kRequired, Slot::kTable};
constexpr FieldSpec kKeyField{"key", kKey, kRequired, Slot::kKey};

// Two forms, user and secret or token: each field is optional here and
// the login itself requires exactly one form (RequestHandler::Login).
constexpr FieldSpec kLogin[] = {{"user", kString, kOptional, Slot::kUser},
                                {"secret", kString, kOptional, Slot::kSecret},
                                {"token", kString, kOptional, Slot::kToken}};
constexpr FieldSpec kEcho[] = {{"data", kJson, kRequired, Slot::kValue}};
constexpr FieldSpec kTableKey[] = {kTableField, kKeyField};
constexpr FieldSpec kSet[] = {kTableField, kKeyField, {"value", kJson, kRequired, Slot::kValue}};
constexpr FieldSpec kMerge[] = {kTableField, kKeyField, {"patch", kJson, kRequired, Slot::kValue}};
// A missing path means the document itself, like [].
constexpr FieldSpec kAdd[] = {kTableField,
                              kKeyField,
                              {"path", kPath, kOptional, Slot::kPath},
                              {"delta", kNumber, kRequired, Slot::kValue}};
constexpr FieldSpec kAll[] = {kTableField,
                              {"after", kScanAfter, kOptional, Slot::kAfter},
                              {"limit", kScanLimit, kOptional, Slot::kLimit}};
constexpr FieldSpec kPush[] = {{"device", kString, kRequired, Slot::kDevice},
                               {"changes", kChanges, kRequired, Slot::kChanges}};
constexpr FieldSpec kPull[] = {{"since", kUnsigned, kOptional, Slot::kSince},
                               {"limit", kSyncLimit, kOptional, Slot::kLimit}};
constexpr FieldSpec kBootstrap[] = {{"limit", kSyncLimit, kOptional, Slot::kLimit},
                                    {"after", kSyncAfter, kOptional, Slot::kSyncAfter}};
constexpr FieldSpec kWait[] = {{"since", kUnsigned, kRequired, Slot::kSince},
                               {"timeout_ms", kUnsigned, kOptional, Slot::kTimeoutMs}};
// Types here; ranges in geo::CheckQuery, which the index runs on every
// query (its messages name the fields the same way).
constexpr FieldSpec kNear[] = {kTableField,
                               {"lat", kNumber, kRequired, Slot::kLat},
                               {"lon", kNumber, kRequired, Slot::kLon},
                               {"limit", kNearLimit, kOptional, Slot::kNearLimit},
                               {"radius_m", kNumber, kOptional, Slot::kRadius},
                               {"box_m", kBox, kOptional, Slot::kBox},
                               {"values", kBool, kOptional, Slot::kValues},
                               {"columns", kBool, kOptional, Slot::kColumns}};
// At most one of key and prefix (RequestHandler::Watch); neither watches
// the whole table.
constexpr FieldSpec kWatch[] = {kTableField,
                                {"key", kKey, kOptional, Slot::kKey},
                                {"prefix", kString, kOptional, Slot::kPrefix},
                                {"since", kUnsigned, kOptional, Slot::kSince},
                                {"initial", kBool, kOptional, Slot::kInitial}};
constexpr FieldSpec kUnwatch[] = {{"watch", kUnsigned, kRequired, Slot::kWatch}};
constexpr FieldSpec kPushChange[] = {{"seq", kUnsigned, kRequired, Slot::kSeq},
                                     {"table", kString, kRequired, Slot::kTable},
                                     {"key", kString, kRequired, Slot::kKey},
                                     {"group", kString, kRequired, Slot::kGroup},
                                     // null deletes the row
                                     {"value", kJson, kRequired, Slot::kValue}};

constexpr std::array<OpSpec, kOpCount> kOps = {{
    {"login", Op::kLogin, kLogin},
    {"logout", Op::kLogout, {}},
    {"ping", Op::kPing, {}},
    {"echo", Op::kEcho, kEcho},
    {"get", Op::kGet, kTableKey},
    {"has", Op::kHas, kTableKey},
    {"set", Op::kSet, kSet},
    {"delete", Op::kDelete, kTableKey},
    {"add", Op::kAdd, kAdd},
    {"merge", Op::kMerge, kMerge},
    {"all", Op::kAll, kAll},
    {"stats", Op::kStats, {}},
    {"push", Op::kPush, kPush},
    {"pull", Op::kPull, kPull},
    {"bootstrap", Op::kBootstrap, kBootstrap},
    {"wait", Op::kWait, kWait},
    {"near", Op::kNear, kNear},
    {"watch", Op::kWatch, kWatch},
    {"unwatch", Op::kUnwatch, kUnwatch},
}};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kOps.size(); ++i) {
    if (static_cast<size_t>(kOps[i].op) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kOps must list the ops in the order of the Op enum");

}  // namespace

std::span<const OpSpec> OpSpecs() { return kOps; }

const OpSpec& SpecOf(Op op) {
  const size_t i = static_cast<size_t>(op);
  SKIFF_CHECK(i < kOps.size());
  return kOps[i];
}

const OpSpec* FindOp(std::string_view name) {
  for (const OpSpec& spec : kOps) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string_view OpName(Op op) {
  const size_t i = static_cast<size_t>(op);
  return i < kOps.size() ? kOps[i].name : "?";
}

std::span<const FieldSpec> PushChangeFields() { return kPushChange; }

}  // namespace skiff::server::internal
