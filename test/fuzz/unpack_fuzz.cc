// Fuzz target for doc::Unpack on arbitrary bytes. Packed documents only ever
// come from Pack, but a corrupted or mixed-up buffer must end as an internal
// error, not a crash or a huge allocation. What Unpack accepts must pack again
// and come back the same.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "base/status.h"
#include "doc/pack.h"

namespace {

using skiff::doc::Value;

// MessagePack can carry NaN, which equals nothing, so == cannot compare such
// values; the packed bytes can.
bool HasNan(const Value& value) {
  if (value.is_number_float()) return std::isnan(value.get<double>());
  if (value.is_structured()) {
    for (const Value& child : value) {
      if (HasNan(child)) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  skiff::Result<Value> value = skiff::doc::Unpack(bytes);
  if (!value.ok()) {
    SKIFF_CHECK(value.status().code() == skiff::StatusCode::kInternal);
    return 0;
  }
  // Unpack bounds nesting at the depth Pack accepts, so this cannot trip
  // Pack's own depth check.
  const std::string packed = skiff::doc::Pack(*value);
  skiff::Result<Value> again = skiff::doc::Unpack(packed);
  SKIFF_CHECK(again.ok());
  if (!HasNan(*value)) SKIFF_CHECK(*again == *value);
  // Packing is deterministic: the second trip gives the same bytes.
  SKIFF_CHECK(skiff::doc::Pack(*again) == packed);
  return 0;
}
