// CachedDocument: one document as the server holds it in memory, in exactly
// one of its forms, and what the memory tiers count of it.
//
// A document is absent (a known absence, so repeated misses do not reach the
// store), text (the compact JSON a set sent, which a get sends back as it
// is, neither building a tree), a tree (parsed, for add and merge), or
// packed (compact bytes, once idle). The forms are one variant, so a
// document cannot be in two at once, and its tier and byte count follow
// from its form alone (TierOf, TierBytesOf): the cache does all accounting
// from those two functions. A plain value, guarded by its shard's lock.
#ifndef SKIFF_SERVER_INTERNAL_CACHED_DOCUMENT_H_
#define SKIFF_SERVER_INTERNAL_CACHED_DOCUMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "base/clock.h"
#include "doc/document.h"

namespace skiff::server::internal {

struct AbsentForm {};
struct TextForm {
  std::string json;  // compact JSON, validated when it arrived
};
struct TreeForm {
  doc::Value tree;
  // Size of its JSON text when it was last serialised. An add or merge in
  // memory durability leaves serialising to the committer, so this lags by
  // up to one flush interval there.
  size_t json_bytes = 0;
};
struct PackedForm {
  std::string bytes;      // doc::Pack
  size_t json_bytes = 0;  // the tree's, kept for when it is unpacked
};
using DocumentForm = std::variant<AbsentForm, TextForm, TreeForm, PackedForm>;

enum class Tier { kNone, kHot, kPacked };

inline Tier TierOf(const DocumentForm& form) {
  if (std::holds_alternative<AbsentForm>(form)) return Tier::kNone;
  if (std::holds_alternative<PackedForm>(form)) return Tier::kPacked;
  return Tier::kHot;
}

// What the tier counts for the form: JSON text bytes when hot, packed bytes
// when packed.
inline size_t TierBytesOf(const DocumentForm& form) {
  if (const auto* t = std::get_if<TextForm>(&form)) return t->json.size();
  if (const auto* t = std::get_if<TreeForm>(&form)) return t->json_bytes;
  if (const auto* p = std::get_if<PackedForm>(&form)) return p->bytes.size();
  return 0;
}

struct CachedDocument {
  DocumentForm form;
  // The committer's number for the newest write of this document (0:
  // none). Until the committer has written it the entry may not be packed
  // or evicted, or a reload would miss it.
  uint64_t last_write = 0;
  // The number of its newest Committer::WriteLatest write (memory mode).
  uint64_t latest_write = 0;
  Clock::TimePoint last_used;

  bool exists() const { return !std::holds_alternative<AbsentForm>(form); }
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_CACHED_DOCUMENT_H_
