// Fuzz target for ScanRequest, the request fast path. Its one promise is
// differential: whenever it takes a frame, DecodeRequest accepts the same
// frame and reads the same request from it. A refusal is always allowed (the
// server then runs DecodeRequest), so only the frames it takes are checked:
// id, op, table, key and path equal; set, merge and add values equal in value
// and in type at every node (1 and 1u and 1.0 compare equal in nlohmann but
// add sums them differently; set may leave the value as text only);
// raw_value is the member's text, inside the frame, and reads as the same
// value, compacted by CompactJson or not (for echo and set it stands in for
// the value). The checks are test/server/scanner_agreement.h, shared with
// the unit tests.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "base/check.h"
#include "doc/document.h"

#include "test/server/scanner_agreement.h"

namespace {

using skiff::doc::Limits;

void CheckAgreement(std::string_view text, const Limits& limits) {
  bool taken = false;
  const std::string disagreement = skiff::test::Disagreement(text, limits, &taken);
  if (!disagreement.empty()) {
    std::fprintf(stderr, "ScanRequest and DecodeRequest disagree on \"%s\": %s\n",
                 skiff::test::Escaped(text).c_str(), disagreement.c_str());
  }
  SKIFF_CHECK(disagreement.empty());
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
