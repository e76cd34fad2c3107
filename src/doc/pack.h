// The packed form: compact bytes for a document that has been idle, so the
// server can keep it in memory at a fraction of the parsed tree's size.
//
// The format is chosen by measurement (docs/memory-tiers.md records bytes and
// unpack times of the candidates): zstd over MessagePack for a tree, and zstd
// over the JSON text itself for a document the server holds as text (what a
// `set` leaves), so packing that one never builds a tree. A one-byte format
// tag says which. Packed bytes are a memory format only, never stored or
// sent. Pure functions; thread-safe (each thread keeps its own zstd
// contexts).
#ifndef SKIFF_DOC_PACK_H_
#define SKIFF_DOC_PACK_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "doc/document.h"

namespace skiff::doc {

class PackDictionary;

// Packs `value`; Unpack(Pack(v)) == v for every Value without NaN (which
// equals nothing) nesting at most 1,024 containers (deeper is a broken
// invariant: documents are depth-checked when they come in). The result is
// allocated at its exact size, since it is what stays in memory.
std::string Pack(const Value& value);

// Packs the compact JSON text of a document without parsing it: a tree costs
// about four times the text's bytes, so parsing a text-form document only to
// pack it would raise the memory packing is meant to lower. The text comes
// back byte for byte through UnpackText, and Unpack(PackText(t)) equals
// Parse(t). `json` must be valid JSON (the server validated it on arrival);
// text zstd does not shrink is kept as it is, behind the tag.
//
// With a `dictionary` (pack_dictionary.h) trained on documents like this
// one, the bytes name it, are about half as large for a ~1 KB document, and
// need it to be unpacked.
std::string PackText(std::string_view json, const PackDictionary* dictionary = nullptr);

// True when `packed` came from PackText, so UnpackText gives its text back
// without a tree; false for Pack's bytes (and for anything else).
bool HoldsText(std::string_view packed);

// The id of the dictionary PackText used for `packed`; 0 when none.
uint32_t DictionaryIdOf(std::string_view packed);

// Unpacks bytes made by Pack or PackText (without a dictionary) into a tree.
// internal (corrupted data) when the bytes are not such a packed document;
// never crashes on arbitrary input.
Result<Value> Unpack(std::string_view packed);

// The JSON text PackText packed, at its exact size, given the dictionary it
// was packed with (DictionaryIdOf), if any. internal when `packed` is not
// PackText's bytes (check HoldsText first) or `dictionary` is not its own.
Result<std::string> UnpackText(std::string_view packed, const PackDictionary* dictionary = nullptr);

}  // namespace skiff::doc

#endif  // SKIFF_DOC_PACK_H_
