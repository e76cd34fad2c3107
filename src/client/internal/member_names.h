// MemberNames: a device's dictionary of object member names, and the compact
// form of a JSON text that it gives. Rows of one app repeat the same member
// names ("id", "title", "done", ...) in every value, which is a fifth of a
// typical 200-byte row; the compact form writes each `"name":` as two or
// three bytes (a 0x01 mark, then the name's number as a varint). Raw control
// characters cannot occur in JSON text outside whitespace, so the mark is
// unambiguous, and Expand gives back the text byte for byte.
//
// Names are numbered as they are first seen, up to kMaxNames; later names
// and names written with escapes stay as they were. Text that already holds
// the mark byte (not JSON) is kept whole behind a 0x02 tag. Not thread-safe:
// the device's table guards it.
#ifndef SKIFF_CLIENT_INTERNAL_MEMBER_NAMES_H_
#define SKIFF_CLIENT_INTERNAL_MEMBER_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace skiff::client::internal {

class MemberNames {
 public:
  static constexpr size_t kMaxNames = 4096;

  // Appends the compact form of `json` to `out`.
  void Compact(std::string_view json, std::string* out);
  // Writes the compact form of `json` at `out`, which has room for
  // kMaxCompactGrowth bytes more than `json`; returns its size.
  static constexpr size_t kMaxCompactGrowth = 1;
  size_t Compact(std::string_view json, char* out);
  // Appends the JSON text that `compact` (made by Compact) stands for.
  void Expand(std::string_view compact, std::string* out) const;

  size_t size() const { return names_.size(); }

 private:
  static constexpr uint32_t kNoGuess = UINT32_MAX;

  // The number of `name`, numbering it if there is room; -1 when full.
  int64_t Number(std::string_view name);
  // Number, tried first against the name that followed the one numbered
  // `*after - 1` last time (`*after` 0: the first name of a value); sets
  // `*after` for the next name. Rows of one table repeat their names in the
  // same order, so the guess nearly always spares the hash lookup.
  int64_t NumberAfter(std::string_view name, uint32_t* after);

  std::deque<std::string> names_;  // a deque: numbers_ views its strings, which must not move
  std::unordered_map<std::string_view, uint32_t> numbers_;
  // follows_[0]: the first name of the last value compacted; follows_[n + 1]:
  // the name last seen after name n. kNoGuess where none was seen yet.
  // One more than there are names.
  std::vector<uint32_t> follows_ = {kNoGuess};
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_MEMBER_NAMES_H_
