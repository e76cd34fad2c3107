// The packed form: compact bytes for a document that has been idle, so the
// server can keep it in memory at a fraction of the parsed tree's size.
//
// The format is chosen by measurement (docs/memory-tiers.md records bytes and
// unpack times of the candidates): today zstd over MessagePack, behind a
// one-byte format tag. Packed bytes are a memory format only, never stored or
// sent. Pure functions; thread-safe (each thread keeps its own zstd
// contexts).
#ifndef SKIFF_DOC_PACK_H_
#define SKIFF_DOC_PACK_H_

#include <string>
#include <string_view>

#include "base/status.h"
#include "doc/document.h"

namespace skiff::doc {

// Packs `value`; Unpack(Pack(v)) == v for every Value without NaN (which
// equals nothing) nesting at most 1,024 containers (deeper is a broken
// invariant: documents are depth-checked when they come in). The result is
// allocated at its exact size, since it is what stays in memory.
std::string Pack(const Value& value);

// Unpacks bytes made by Pack. internal (corrupted data) when the bytes are not
// a packed document; never crashes on arbitrary input.
Result<Value> Unpack(std::string_view packed);

}  // namespace skiff::doc

#endif  // SKIFF_DOC_PACK_H_
