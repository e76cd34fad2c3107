// Fuzz target for the request decoder (src/server/internal/wire/
// request_decoder.h), which reads every frame a client sends. Its promises:
// any bytes decode to a request or end in a bad_request or too_large error
// whose message is valid UTF-8 (it goes back in a text frame), never a
// crash; the id an error reply carries is the frame's own id whenever the
// frame is an object with an unsigned id, and none otherwise; a decoded
// request is an op of the field table, sets no field its row lacks, names a
// valid table and key, and has a path within the depth limit; DecodeFrame
// (the scanner's fast path, then the full decoder) ends as DecodeRequest
// does, reading what the scanner takes exactly as the full decoder reads it
// (test/server/scanner_agreement.h); and decoding is deterministic: a copy
// of the bytes elsewhere in memory gives the same request or the same
// error.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "base/check.h"
#include "base/status.h"
#include "doc/document.h"
#include "doc/names.h"
#include "server/internal/wire/request_decoder.h"
#include "server/internal/wire/request_fields.h"

#include "test/server/same_value.h"
#include "test/server/scanner_agreement.h"

namespace {

using skiff::Result;
using skiff::Status;
using skiff::StatusCode;
using skiff::doc::Limits;
using skiff::doc::Value;
using skiff::server::internal::DecodeFrame;
using skiff::server::internal::DecodeRequest;
using skiff::server::internal::FieldSpec;
using skiff::server::internal::FieldType;
using skiff::server::internal::FindOp;
using skiff::server::internal::kOpCount;
using skiff::server::internal::OpName;
using skiff::server::internal::Request;
using skiff::server::internal::SetDocumentText;
using skiff::server::internal::Slot;
using skiff::server::internal::SpecOf;
using skiff::test::Escaped;
using skiff::test::SameValue;

// Stops the run, naming the frame and what went wrong.
void Fail(std::string_view text, const std::string& what) {
  std::fprintf(stderr, "request decoder on \"%s\": %s\n", Escaped(text).c_str(), what.c_str());
  SKIFF_CHECK(false);
}

// Bitwise, so that two readings of the same number compare equal even when
// it is not a number.
bool SameDouble(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

bool SameOptionalDouble(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || SameDouble(*a, *b));
}

// How two requests differ, empty when they are the same in every field
// (raw_value compared by its text, since it points into its own frame).
std::string RequestDifference(const Request& a, const Request& b) {
  if (a.id != b.id) return "id";
  if (a.op != b.op) return "op";
  if (a.user != b.user || a.secret != b.secret) return "user or secret";
  if (a.table != b.table || a.key != b.key) return "table or key";
  if (a.after != b.after || a.limit != b.limit) return "after or limit";
  if (a.path != b.path) return "path";
  if (!SameValue(a.value, b.value)) return "value";
  if (a.raw_value != b.raw_value) return "raw_value";
  if (a.push.device != b.push.device || a.push.changes.size() != b.push.changes.size()) {
    return "push";
  }
  for (size_t i = 0; i < a.push.changes.size(); ++i) {
    const auto& x = a.push.changes[i];
    const auto& y = b.push.changes[i];
    if (x.seq != y.seq || x.table != y.table || x.key != y.key || x.group != y.group ||
        x.value != y.value) {
      return "changes[" + std::to_string(i) + "]";
    }
  }
  if (a.since != b.since || a.sync_after != b.sync_after || a.timeout_ms != b.timeout_ms) {
    return "since, after or timeout_ms";
  }
  if (!SameDouble(a.geo.lat, b.geo.lat) || !SameDouble(a.geo.lon, b.geo.lon) ||
      a.geo.limit != b.geo.limit || !SameOptionalDouble(a.geo.radius_m, b.geo.radius_m) ||
      !SameOptionalDouble(a.geo.box_w_m, b.geo.box_w_m) ||
      !SameOptionalDouble(a.geo.box_h_m, b.geo.box_h_m)) {
    return "geo query";
  }
  if (a.values != b.values || a.columns != b.columns) return "values or columns";
  return "";
}

// SameValue, except that a signed and an unsigned integer of the same value
// count as one kind: a set's document stored by the full decoder is dumped
// from its tree, where -0 is a signed 0 that dumps as "0" and reads back
// unsigned (the fast path keeps the text "-0"); both are the integer 0 to
// every reader of the document.
bool SameStoredValue(const Value& a, const Value& b) {
  if (a.is_number_integer() && b.is_number_integer()) return a == b;
  if (a.type() != b.type() || a != b) return false;
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameStoredValue(a[i], b[i])) return false;
    }
  } else if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !SameStoredValue(*it, *other)) return false;
    }
  }
  return true;
}

std::string Describe(const Status& s, const std::optional<uint64_t>& id) {
  return s.ToString() + (id ? " (id " + std::to_string(*id) + ")" : " (no id)");
}

// Whether the request's field for `slot` still holds what a default Request
// holds. The push change's own slots are never the request's.
bool AtDefault(const Request& r, Slot slot) {
  const Request fresh;
  switch (slot) {
    case Slot::kUser:
      return r.user.empty();
    case Slot::kSecret:
      return r.secret.empty();
    case Slot::kToken:
      return r.token.empty();
    case Slot::kTable:
      return r.table.empty();
    case Slot::kKey:
      return r.key.empty();
    case Slot::kValue:
      return r.value.is_null();
    case Slot::kPath:
      return r.path.empty();
    case Slot::kAfter:
      return r.after.empty();
    case Slot::kLimit:
      return r.limit == fresh.limit;
    case Slot::kDevice:
      return r.push.device.empty();
    case Slot::kChanges:
      return r.push.changes.empty();
    case Slot::kSince:
      return r.since == fresh.since;
    case Slot::kSyncAfter:
      return r.sync_after == fresh.sync_after;
    case Slot::kTimeoutMs:
      return r.timeout_ms == fresh.timeout_ms;
    case Slot::kLat:
      return SameDouble(r.geo.lat, fresh.geo.lat);
    case Slot::kLon:
      return SameDouble(r.geo.lon, fresh.geo.lon);
    case Slot::kNearLimit:
      return r.geo.limit == fresh.geo.limit;
    case Slot::kRadius:
      return !r.geo.radius_m.has_value();
    case Slot::kBox:
      return !r.geo.box_w_m.has_value() && !r.geo.box_h_m.has_value();
    case Slot::kValues:
      return r.values == fresh.values;
    case Slot::kColumns:
      return r.columns == fresh.columns;
    case Slot::kPrefix:
      return r.prefix.empty();
    case Slot::kInitial:
      return r.initial == fresh.initial;
    case Slot::kWatch:
      return r.watch == fresh.watch;
    case Slot::kSeq:
    case Slot::kGroup:
      return true;
  }
  return false;
}

constexpr Slot kRequestSlots[] = {
    Slot::kUser,      Slot::kSecret,    Slot::kTable,     Slot::kKey,    Slot::kValue,
    Slot::kPath,      Slot::kAfter,     Slot::kLimit,     Slot::kDevice, Slot::kChanges,
    Slot::kSince,     Slot::kSyncAfter, Slot::kTimeoutMs, Slot::kLat,    Slot::kLon,
    Slot::kNearLimit, Slot::kRadius,    Slot::kBox,       Slot::kValues, Slot::kColumns,
    Slot::kPrefix,    Slot::kInitial,   Slot::kWatch,
};

// What a request DecodeRequest accepted must be, by its op's row of the
// field table.
void CheckDecoded(std::string_view text, const Request& r, const Limits& limits) {
  if (static_cast<size_t>(r.op) >= kOpCount) Fail(text, "op outside the table");
  const auto& spec = SpecOf(r.op);
  const auto* found = FindOp(OpName(r.op));
  if (found == nullptr || found->op != r.op) Fail(text, "op name does not find the op");
  if (!r.raw_value.empty()) Fail(text, "DecodeRequest set raw_value");
  for (Slot slot : kRequestSlots) {
    bool listed = false;
    for (const FieldSpec& f : spec.fields) listed = listed || f.slot == slot;
    if (!listed && !AtDefault(r, slot)) {
      Fail(text, "op " + std::string(spec.name) + " set a field its row does not list");
    }
  }
  for (const FieldSpec& f : spec.fields) {
    if (f.type == FieldType::kTableName && !skiff::doc::ValidateTableName(r.table).ok()) {
      Fail(text, "invalid table name accepted");
    }
    if (f.type == FieldType::kKey && !skiff::doc::ValidateKey(r.key).ok()) {
      Fail(text, "invalid key accepted");
    }
  }
  if (r.path.size() >= limits.max_depth) Fail(text, "path as deep as the depth limit accepted");
}

// An error: its code, a message fit for a reply, and the id a reply carries.
void CheckError(std::string_view text, const Status& s, const std::optional<uint64_t>& id,
                const Limits& limits) {
  if (s.code() != StatusCode::kBadRequest && s.code() != StatusCode::kTooLarge) {
    Fail(text, "unexpected error " + s.ToString());
  }
  if (s.message().empty() || !skiff::doc::IsValidUtf8(s.message())) {
    Fail(text, "error message empty or not UTF-8");
  }
  std::optional<uint64_t> expected;
  Result<Value> parsed = skiff::doc::Parse(text, limits);
  if (parsed.ok() && parsed->is_object()) {
    auto it = parsed->find("id");
    if (it != parsed->end() && it->is_number_unsigned()) expected = it->get<uint64_t>();
  }
  if (id != expected) Fail(text, "error " + Describe(s, id) + " carries the wrong id");
}

void CheckDecoder(std::string_view text, const Limits& limits) {
  std::optional<uint64_t> id;
  Result<Request> full = DecodeRequest(text, limits, &id);
  if (full.ok()) {
    if (id != full->id) Fail(text, "id not reported on success");
    CheckDecoded(text, *full, limits);
  } else {
    CheckError(text, full.status(), id, limits);
  }

  // Deterministic: again, from a copy of the bytes at another address.
  const std::string copy(text);
  std::optional<uint64_t> id2;
  Result<Request> second = DecodeRequest(copy, limits, &id2);
  if (second.ok() != full.ok() || id2 != id) Fail(text, "a second decode ends differently");
  if (full.ok()) {
    const std::string diff = RequestDifference(*full, *second);
    if (!diff.empty()) Fail(text, "a second decode reads another " + diff);
  } else if (second.status().code() != full.status().code() ||
             second.status().message() != full.status().message()) {
    Fail(text, "a second decode says " + second.status().ToString() + " instead of " +
                   full.status().ToString());
  }

  // The scanner reads what it takes as the full decoder does.
  bool taken = false;
  const std::string disagreement = skiff::test::Disagreement(text, limits, &taken);
  if (!disagreement.empty()) Fail(text, "ScanRequest disagrees: " + disagreement);

  // DecodeFrame ends as DecodeRequest does; when the scanner did not take
  // the frame, with the very same request or error.
  Request framed;
  std::optional<uint64_t> frame_id;
  const Status status = DecodeFrame(text, limits, &framed, &frame_id);
  if (status.ok() != full.ok() || frame_id != id) {
    Fail(text, "DecodeFrame says " + Describe(status, frame_id) + ", DecodeRequest " +
                   Describe(full.status(), id));
  }
  if (!status.ok()) {
    if (status.code() != full.status().code() || status.message() != full.status().message()) {
      Fail(text, "DecodeFrame's error differs from DecodeRequest's");
    }
    return;
  }
  if (!taken) {
    const std::string diff = RequestDifference(framed, *full);
    if (!diff.empty()) Fail(text, "DecodeFrame reads another " + diff);
  }
  if (full->op == skiff::server::internal::Op::kSet) {
    // The text stored for a set reads as the value, by either path.
    for (const Request* r : {&framed, &*full}) {
      Result<Value> stored = skiff::doc::Parse(SetDocumentText(*r), Limits{});
      if (!stored.ok() || !SameStoredValue(*stored, full->value)) {
        Fail(text, "SetDocumentText does not read as the value");
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckDecoder(text, Limits{});
  // Tight limits reach the depth, path and size edges with short inputs.
  CheckDecoder(text, Limits{.max_depth = 3, .max_document_bytes = 200});
  CheckDecoder(text, Limits{.max_depth = 1});
  return 0;
}
