// RowTable: the rows a Device serves from memory, kept compact. A device
// holds every row it may see, so what each row costs beyond its bytes
// decides how many fit: a std::map of (group, table, key) strings to value
// strings cost about 175 bytes per row on top of a 200-byte value (a tree
// node, three string headers, the value's own allocation).
//
// Here rows are one sorted array of 16-byte entries, (group, table) pairs are
// numbered once, and keys and values sit back to back in an arena of 64 KiB
// blocks, the values in MemberNames' compact form. Full blocks never move:
// one growing buffer copied the whole arena, and touched as many fresh
// pages, each time it grew, which cost a bootstrap about as much as
// compacting its values. Only the first block grows (doubling, up to 64
// KiB), so a device of a few rows holds little. A replaced or erased row
// leaves its bytes behind until the dead bytes outweigh the live ones; then
// the arena is rewritten. Writes in key order (a load, a bootstrap page)
// append; any other insert moves the entries after it (16 bytes each).
//
// Not thread-safe: the Device guards it with its lock.
#ifndef SKIFF_CLIENT_INTERNAL_ROW_TABLE_H_
#define SKIFF_CLIENT_INTERNAL_ROW_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/device_storage.h"
#include "client/internal/member_names.h"

namespace skiff::client::internal {

class RowTable {
 public:
  // Room for `rows` more rows, so a load of known size allocates its
  // entries once (the arena grows a block at a time anyway).
  void Reserve(size_t rows);
  // Gives back what a Reserve left unused.
  void ShrinkToFit();

  void Put(const RowName& name, std::string_view json);
  void Erase(const RowName& name);

  std::optional<std::string> Get(const RowName& name) const;
  // The rows of (group, table), in key order.
  std::vector<StoredRow> Scan(std::string_view group, std::string_view table) const;
  size_t size() const { return entries_.size(); }
  // Heap bytes held by entries and arena (the (group, table) list and the
  // member names are not counted: they do not grow with rows).
  size_t bytes() const { return entries_.capacity() * sizeof(Entry) + block_bytes_; }

 private:
  struct Entry {
    uint32_t space;   // index into spaces_
    uint32_t offset;  // of the key in the arena (see At); the value follows it
    uint32_t key_size;
    uint32_t value_size;  // compact form
  };
  using Space = std::pair<std::string, std::string>;  // (group, table)

  static constexpr uint32_t kBlockBits = 16;
  static constexpr size_t kBlockSize = size_t{1} << kBlockBits;
  static constexpr size_t kFirstBlockSize = 1024;

  // An arena offset's byte: block offset >> kBlockBits, at offset's low bits.
  const char* At(uint32_t offset) const {
    return blocks_[offset >> kBlockBits].get() + (offset & (kBlockSize - 1));
  }
  std::string_view KeyOf(const Entry& e) const {
    return std::string_view(At(e.offset), e.key_size);
  }
  std::string_view ValueOf(const Entry& e) const {
    return std::string_view(At(e.offset) + e.key_size, e.value_size);
  }
  // Where `size` bytes can go at the arena's end (end_), starting a block
  // when the current one lacks them: a row never straddles two blocks.
  char* Room(size_t size);
  // Where (space, key) is or would go in entries_.
  size_t LowerBound(const Space& space, std::string_view key) const;
  bool Equals(const Entry& e, const Space& space, std::string_view key) const;
  // The number of (group, table), numbering it if new (Put) or -1 (lookups).
  int64_t FindSpace(std::string_view group, std::string_view table) const;
  uint32_t SpaceOf(const RowName& name);
  // Writes key and compact value at the end of the arena into `e`.
  void Append(std::string_view key, std::string_view json, Entry* e);
  void Drop(const Entry& e) { dead_ += e.key_size + e.value_size; }
  void CompactIfMostlyDead();

  std::vector<Space> spaces_;
  std::vector<Entry> entries_;  // in (group, table, key) order
  // The arena's blocks by offset >> kBlockBits. A row larger than a block
  // gets a block of several blocks' size, alone; the indexes it spans past
  // the first are null, and the next row starts after them.
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_bytes_ = 0;     // allocated for blocks_
  size_t first_capacity_ = 0;  // of blocks_[0]: below kBlockSize while it is the only one
  size_t end_ = 0;             // arena offset past the last row written
  size_t dead_ = 0;            // arena bytes below end_ no entry points at
  MemberNames names_;
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_ROW_TABLE_H_
