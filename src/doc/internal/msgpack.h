// MessagePack encoding of a Value, the inner layer of the packed form.
//
// Written for the packed tier rather than taken from nlohmann: the decoder
// builds the tree directly (object members arrive sorted, so each insert is
// at the end), it refuses to nest deeper than kMaxPackedDepth instead of
// recursing without bound, and it never trusts a length it has not got the
// bytes for. The output is standard MessagePack: integers in the smallest
// form, doubles as float32 when that is exact, binary values as bin (or ext
// when they carry a subtype). Pure functions; thread-safe.
#ifndef SKIFF_DOC_INTERNAL_MSGPACK_H_
#define SKIFF_DOC_INTERNAL_MSGPACK_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"
#include "doc/document.h"

namespace skiff::doc::internal {

// Containers nested deeper than this are neither written nor read. Far above
// any Limits::max_depth a server would use; the recursion it allows needs well
// under 1 MiB of stack.
inline constexpr size_t kMaxPackedDepth = 1024;

// Appends the MessagePack form of `value` to `out`. `value` must nest at most
// kMaxPackedDepth containers (a broken invariant otherwise: documents are
// depth-checked when they come in).
void AppendMsgpack(const Value& value, std::string& out);

// Decodes exactly one MessagePack value filling all of `bytes`. internal when
// the bytes are truncated, malformed, nest too deep or have trailing bytes.
Result<Value> DecodeMsgpack(std::string_view bytes);

}  // namespace skiff::doc::internal

#endif  // SKIFF_DOC_INTERNAL_MSGPACK_H_
