// Fuzz target for doc::Parse, the entry point of every document that arrives
// from outside. Beyond "never crashes", it checks what the rest of the server
// relies on: errors are bad_request or too_large with a message safe to send,
// a parsed value respects the depth limit, and a value survives both of its
// other forms (Dump -> Parse, and Pack -> Unpack) unchanged.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/check.h"
#include "base/status.h"
#include "doc/document.h"
#include "doc/pack.h"

namespace {

using skiff::StatusCode;
using skiff::doc::Limits;
using skiff::doc::Value;

// The message may go to a client verbatim, so it must be plain text.
bool IsPrintableAscii(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7E) return false;
  }
  return true;
}

// "malformed JSON at byte N: ..." must point inside the text (or at its end
// when the text stopped early).
void CheckOffset(const std::string& message, size_t text_size) {
  constexpr std::string_view kPrefix = "malformed JSON at byte ";
  if (message.compare(0, kPrefix.size(), kPrefix) != 0) return;
  size_t offset = 0;
  size_t i = kPrefix.size();
  SKIFF_CHECK(i < message.size() && message[i] >= '0' && message[i] <= '9');
  for (; i < message.size() && message[i] >= '0' && message[i] <= '9'; ++i) {
    offset = offset * 10 + static_cast<size_t>(message[i] - '0');
  }
  SKIFF_CHECK(offset <= text_size);
}

// Parses under `limits` and checks the result; returns it for comparisons
// between limits.
skiff::Result<Value> CheckParse(std::string_view text, const Limits& limits) {
  skiff::Result<Value> parsed = skiff::doc::Parse(text, limits);
  if (!parsed.ok()) {
    const skiff::Status status = parsed.status();
    SKIFF_CHECK(status.code() == StatusCode::kBadRequest || status.code() == StatusCode::kTooLarge);
    SKIFF_CHECK(IsPrintableAscii(status.message()));
    CheckOffset(status.message(), text.size());
    return parsed;
  }
  const Value& value = *parsed;
  SKIFF_CHECK(skiff::doc::CheckDepth(value, limits.max_depth).ok());

  // Dump -> Parse gives the same value, and dumping that gives the same text:
  // what the store writes is what it reads back. The compact text can be
  // longer than the input ("1e2" dumps as "100.0"), so only depth is limited.
  const std::string dumped = skiff::doc::Dump(value);
  const Limits reparse_limits{.max_depth = limits.max_depth,
                              .max_document_bytes = std::numeric_limits<size_t>::max()};
  skiff::Result<Value> again = skiff::doc::Parse(dumped, reparse_limits);
  SKIFF_CHECK(again.ok());
  SKIFF_CHECK(*again == value);
  SKIFF_CHECK(skiff::doc::Dump(*again) == dumped);

  // Pack -> Unpack gives the same value. Comparing the dumps as well catches
  // a number changing kind (1.0 coming back as 1), which == forgives but
  // AddAtPath does not: the kind decides integer or floating-point sums.
  const std::string packed = skiff::doc::Pack(value);
  skiff::Result<Value> unpacked = skiff::doc::Unpack(packed);
  SKIFF_CHECK(unpacked.ok());
  SKIFF_CHECK(*unpacked == value);
  SKIFF_CHECK(skiff::doc::Dump(*unpacked) == dumped);
  return parsed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const skiff::Result<Value> by_default = CheckParse(text, Limits{});
  // Tight limits reach the too_large paths with short inputs.
  const skiff::Result<Value> tight =
      CheckParse(text, Limits{.max_depth = 3, .max_document_bytes = 200});
  // Limits only refuse; they never change what a text means.
  if (tight.ok()) {
    SKIFF_CHECK(by_default.ok());
    SKIFF_CHECK(skiff::doc::Dump(*tight) == skiff::doc::Dump(*by_default));
  }
  return 0;
}
