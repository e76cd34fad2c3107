// Fuzz target for ScanRequest, the request fast path. Its one promise is
// differential: whenever it takes a frame, DecodeRequest accepts the same
// frame and reads the same request from it. A refusal is always allowed (the
// server then runs DecodeRequest), so only the frames it takes are checked:
// id, op, table, key and path equal; set, merge and add values equal in value
// and in type at every node (1 and 1u and 1.0 compare equal in nlohmann but
// add sums them differently; set may leave the value as text only);
// raw_value is the member's text, inside the frame, and reads as the same
// value, compacted by CompactJson or not (for echo and set it stands in for
// the value).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/check.h"
#include "base/status.h"
#include "doc/document.h"
#include "server/internal/protocol.h"
#include "server/internal/request_scanner.h"

#include "test/server/same_value.h"

namespace {

using skiff::doc::Limits;
using skiff::doc::Value;
using skiff::server::internal::Op;
using skiff::server::internal::Request;
using skiff::test::SameValue;

void CheckAgreement(std::string_view text, const Limits& limits) {
  Request fast;
  if (!skiff::server::internal::ScanRequest(text, limits, &fast)) return;
  std::optional<uint64_t> id;
  skiff::Result<Request> full = skiff::server::internal::DecodeRequest(text, limits, &id);
  SKIFF_CHECK(full.ok());
  SKIFF_CHECK(fast.id == full->id);
  SKIFF_CHECK(fast.op == full->op);
  SKIFF_CHECK(fast.table == full->table);
  SKIFF_CHECK(fast.key == full->key);
  SKIFF_CHECK(fast.path == full->path);
  SKIFF_CHECK(fast.user.empty() && full->user.empty());
  SKIFF_CHECK(fast.limit == full->limit);
  SKIFF_CHECK(full->raw_value.empty());

  switch (fast.op) {
    case Op::kMerge:
    case Op::kAdd:
      SKIFF_CHECK(SameValue(fast.value, full->value));
      break;
    case Op::kSet:
      // Kept as text (request_scanner.h); a tree, if there is one, agrees.
      SKIFF_CHECK(fast.value.is_null() || SameValue(fast.value, full->value));
      break;
    case Op::kEcho:
      SKIFF_CHECK(fast.value.is_null());
      break;
    default:
      SKIFF_CHECK(fast.value.is_null());
      SKIFF_CHECK(fast.raw_value.empty());
      return;
  }
  // raw_value points into the frame and holds the member's JSON.
  const std::string_view raw = fast.raw_value;
  SKIFF_CHECK(!raw.empty());
  SKIFF_CHECK(raw.data() >= text.data() && raw.data() + raw.size() <= text.data() + text.size());
  skiff::Result<Value> reparsed = skiff::doc::Parse(raw, limits);
  SKIFF_CHECK(reparsed.ok());
  SKIFF_CHECK(SameValue(*reparsed, full->value));
  // Compacted, as the cache and replies may hold it, it still reads the same.
  const std::string compact = skiff::server::internal::CompactJson(raw);
  skiff::Result<Value> recompacted = skiff::doc::Parse(compact, limits);
  SKIFF_CHECK(recompacted.ok());
  SKIFF_CHECK(SameValue(*recompacted, full->value));
  SKIFF_CHECK(skiff::server::internal::CompactJson(compact) == compact);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckAgreement(text, Limits{});
  // Tight limits reach the depth and size edges with short inputs.
  CheckAgreement(text, Limits{.max_depth = 3, .max_document_bytes = 200});
  CheckAgreement(text, Limits{.max_depth = 1});
  return 0;
}
