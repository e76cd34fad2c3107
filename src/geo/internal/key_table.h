// KeyTable: finds the small integer id that stands for a key, without
// storing the key a second time.
//
// The table holds only 4-byte ids; the key of an id comes from `key_of(id)`
// (the owner's slot array), so each key is kept once. Open addressing with
// linear probing, load at most 3/4, and backward-shift deletion (no
// tombstones, so probe chains never rot after many moves and deletes).
// Thread-compatible: the owner serialises writers and readers.
#ifndef SKIFF_GEO_INTERNAL_KEY_TABLE_H_
#define SKIFF_GEO_INTERNAL_KEY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"

namespace skiff::geo::internal {

template <typename KeyOf, typename Allocator>
class KeyTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  KeyTable(KeyOf key_of, const Allocator& alloc) : key_of_(std::move(key_of)), cells_(alloc) {}

  // The id whose key is `key`, or kNone.
  uint32_t Find(std::string_view key) const {
    if (size_ == 0) return kNone;
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      const uint32_t id = cells_[i];
      if (id == kNone) return kNone;
      if (key_of_(id) == key) return id;
    }
  }

  // Adds `id`, whose key must not be in the table yet.
  void Insert(uint32_t id) {
    SKIFF_CHECK(id != kNone);
    if ((size_ + 1) * 4 > cells_.size() * 3) Resize(cells_.empty() ? 16 : cells_.size() * 2);
    Place(id);
    ++size_;
  }

  // Removes `id`, which must be in the table.
  void Erase(uint32_t id) {
    size_t hole = Home(key_of_(id));
    while (cells_[hole] != id) {
      SKIFF_CHECK(cells_[hole] != kNone);
      hole = (hole + 1) & mask_;
    }
    // Pull later members of the probe chain back over the hole, as long as
    // their home does not lie after the hole (cyclically).
    for (size_t next = (hole + 1) & mask_; cells_[next] != kNone; next = (next + 1) & mask_) {
      const size_t home = Home(key_of_(cells_[next]));
      const bool stays =
          hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
      if (stays) continue;
      cells_[hole] = cells_[next];
      hole = next;
    }
    cells_[hole] = kNone;
    --size_;
  }

  // Forgets every id and releases the cells.
  void Clear() {
    cells_.clear();
    cells_.shrink_to_fit();
    size_ = 0;
    mask_ = 0;
  }

  // Sizes the cells for `n` ids at once (a bulk load), so loading them does
  // not rehash along the way.
  void Reserve(size_t n) {
    size_t cells = 16;
    while (n * 4 > cells * 3) cells *= 2;
    if (cells > cells_.size()) Resize(cells);
  }

  size_t size() const { return size_; }

 private:
  size_t Home(std::string_view key) const { return std::hash<std::string_view>{}(key)&mask_; }

  void Place(uint32_t id) {
    size_t i = Home(key_of_(id));
    while (cells_[i] != kNone) i = (i + 1) & mask_;
    cells_[i] = id;
  }

  void Resize(size_t cells) {
    std::vector<uint32_t, Allocator> old(cells, kNone, cells_.get_allocator());
    old.swap(cells_);
    mask_ = cells - 1;
    for (uint32_t id : old) {
      if (id != kNone) Place(id);
    }
  }

  KeyOf key_of_;
  std::vector<uint32_t, Allocator> cells_;  // a power of two in size, or empty
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace skiff::geo::internal

#endif  // SKIFF_GEO_INTERNAL_KEY_TABLE_H_
