// Checks shared by request_scanner_test, request_scanner_mutation_test and
// the request_scanner fuzz target: does ScanRequest read a frame exactly as
// DecodeRequest does?
#ifndef SKIFF_TEST_SERVER_SCANNER_AGREEMENT_H_
#define SKIFF_TEST_SERVER_SCANNER_AGREEMENT_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "doc/document.h"
#include "server/internal/wire/request_decoder.h"
#include "server/internal/wire/request_fields.h"
#include "server/internal/wire/request_scanner.h"

#include "test/server/same_value.h"

namespace skiff::test {

using server::internal::CompactJson;
using server::internal::DecodeRequest;
using server::internal::Op;
using server::internal::OpName;
using server::internal::Request;
using server::internal::ScanRequest;

// The frame as a C string literal, so invalid bytes show in a failure.
inline std::string Escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (u >= 0x20 && u < 0x7F) {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
    }
  }
  return out;
}

inline bool Within(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

// Runs both decoders on `text`. `*taken` says whether the fast path took it;
// the result describes how the two disagree, empty when they do not (a
// refusal by the fast path always agrees).
inline std::string Disagreement(std::string_view text, const doc::Limits& limits, bool* taken) {
  Request fast;
  *taken = ScanRequest(text, limits, &fast);
  if (!*taken) return "";
  std::optional<uint64_t> id;
  Result<Request> full = DecodeRequest(text, limits, &id);
  if (!full.ok()) return "DecodeRequest refuses it: " + full.status().ToString();
  if (fast.id != full->id) {
    return "id " + std::to_string(fast.id) + " vs " + std::to_string(full->id);
  }
  if (fast.op != full->op) {
    return "op " + std::string(OpName(fast.op)) + " vs " + std::string(OpName(full->op));
  }
  if (fast.table != full->table) return "table '" + fast.table + "' vs '" + full->table + "'";
  if (fast.key != full->key) return "key '" + fast.key + "' vs '" + full->key + "'";
  if (fast.path != full->path) return "path differs";
  if (fast.user != full->user || fast.secret != full->secret || fast.after != full->after ||
      fast.limit != full->limit || fast.since != full->since ||
      fast.timeout_ms != full->timeout_ms || !fast.push.device.empty() ||
      !fast.push.changes.empty()) {
    return "a field of another op is set";
  }
  if (!full->raw_value.empty()) return "DecodeRequest set raw_value";

  switch (fast.op) {
    case Op::kMerge:
    case Op::kAdd:
      if (!SameValue(fast.value, full->value)) {
        return "value " + doc::Dump(fast.value) + " (type " + fast.value.type_name() + ") vs " +
               doc::Dump(full->value) + " (type " + full->value.type_name() + ")";
      }
      break;
    case Op::kSet:
      // Kept as text (request_scanner.h); a tree, if there is one, must agree.
      if (!fast.value.is_null() && !SameValue(fast.value, full->value)) {
        return "value " + doc::Dump(fast.value) + " vs " + doc::Dump(full->value);
      }
      break;
    case Op::kEcho:
      if (!fast.value.is_null()) return "echo filled value";
      break;
    default:
      if (!fast.value.is_null()) return "value set for an op without one";
      if (!fast.raw_value.empty()) return "raw_value set for an op without one";
      return "";
  }

  // set, merge, add and echo: raw_value is that member's text, in the frame,
  // and reads as DecodeRequest's value, compacted or not.
  if (fast.raw_value.empty() || !Within(fast.raw_value, text)) {
    return "raw_value does not point into the frame";
  }
  Result<doc::Value> raw = doc::Parse(fast.raw_value, limits);
  if (!raw.ok()) return "raw_value does not parse: " + raw.status().ToString();
  if (!SameValue(*raw, full->value)) {
    return "raw_value " + std::string(fast.raw_value) + " reads as " + doc::Dump(*raw) + " vs " +
           doc::Dump(full->value);
  }
  const std::string compact = CompactJson(fast.raw_value);
  Result<doc::Value> reread = doc::Parse(compact, limits);
  if (!reread.ok() || !SameValue(*reread, full->value)) {
    return "CompactJson(raw_value) " + compact + " reads differently";
  }
  if (CompactJson(compact) != compact) return "CompactJson left whitespace in " + compact;
  return "";
}

}  // namespace skiff::test

#endif  // SKIFF_TEST_SERVER_SCANNER_AGREEMENT_H_
