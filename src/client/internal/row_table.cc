#include "client/internal/row_table.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "base/check.h"

namespace skiff::client::internal {
namespace {

// Below this the arena is never rewritten: the copy would cost more than the
// bytes it frees.
constexpr size_t kMinDeadToCompact = 64 * 1024;

}  // namespace

void RowTable::Reserve(size_t rows) { entries_.reserve(entries_.size() + rows); }

void RowTable::ShrinkToFit() {
  entries_.shrink_to_fit();
  blocks_.shrink_to_fit();
}

char* RowTable::Room(size_t size) {
  const size_t index = end_ >> kBlockBits;
  const size_t within = end_ & (kBlockSize - 1);
  const bool fits =
      index < blocks_.size() && blocks_[index] != nullptr && within + size <= kBlockSize;
  if (fits && within + size > first_capacity_ && blocks_.size() == 1) {
    // The first block starts small and doubles up to a whole block, so a
    // device of a few rows does not hold 64 KiB for them.
    const size_t capacity = std::min(kBlockSize, std::max(within + size, 2 * first_capacity_));
    auto grown = std::make_unique_for_overwrite<char[]>(capacity);
    std::memcpy(grown.get(), blocks_[0].get(), within);
    blocks_[0] = std::move(grown);
    block_bytes_ += capacity - first_capacity_;
    first_capacity_ = capacity;
  } else if (!fits) {
    const size_t start = blocks_.size() * kBlockSize;
    dead_ += start - end_;  // the rest of the block before, unused
    end_ = start;
    const size_t spans = std::max<size_t>(1, (size + kBlockSize - 1) / kBlockSize);
    size_t capacity = spans * kBlockSize;
    if (blocks_.empty()) capacity = first_capacity_ = std::max(size, kFirstBlockSize);
    // Uninitialised: every byte a row uses is written before it is read.
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(capacity));
    blocks_.resize(blocks_.size() + spans - 1);
    block_bytes_ += capacity;
  }
  SKIFF_CHECK(end_ + size <= std::numeric_limits<uint32_t>::max());
  return blocks_[end_ >> kBlockBits].get() + (end_ & (kBlockSize - 1));
}

int64_t RowTable::FindSpace(std::string_view group, std::string_view table) const {
  for (size_t i = 0; i < spaces_.size(); ++i) {
    if (spaces_[i].first == group && spaces_[i].second == table) return static_cast<int64_t>(i);
  }
  return -1;
}

uint32_t RowTable::SpaceOf(const RowName& name) {
  // The last one is nearly always the one: rows come in (group, table) runs.
  if (!spaces_.empty() && spaces_.back().first == name.group &&
      spaces_.back().second == name.table) {
    return static_cast<uint32_t>(spaces_.size() - 1);
  }
  const int64_t found = FindSpace(name.group, name.table);
  if (found >= 0) return static_cast<uint32_t>(found);
  spaces_.emplace_back(name.group, name.table);
  return static_cast<uint32_t>(spaces_.size() - 1);
}

size_t RowTable::LowerBound(const Space& space, std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), 0, [&](const Entry& e, int) {
    const Space& s = spaces_[e.space];
    if (int c = s.first.compare(space.first); c != 0) return c < 0;
    if (int c = s.second.compare(space.second); c != 0) return c < 0;
    return KeyOf(e) < key;
  });
  return static_cast<size_t>(it - entries_.begin());
}

bool RowTable::Equals(const Entry& e, const Space& space, std::string_view key) const {
  return spaces_[e.space] == space && KeyOf(e) == key;
}

void RowTable::Append(std::string_view key, std::string_view json, Entry* e) {
  char* w = Room(key.size() + json.size() + MemberNames::kMaxCompactGrowth);
  std::memcpy(w, key.data(), key.size());
  const size_t value_size = names_.Compact(json, w + key.size());
  e->offset = static_cast<uint32_t>(end_);
  e->key_size = static_cast<uint32_t>(key.size());
  e->value_size = static_cast<uint32_t>(value_size);
  end_ += key.size() + value_size;
}

void RowTable::Put(const RowName& name, std::string_view json) {
  const uint32_t space = SpaceOf(name);
  const Space& s = spaces_[space];
  size_t at = entries_.size();
  // Rows written in order go at the end without a search.
  if (!entries_.empty()) {
    const Entry& last = entries_.back();
    const Space& ls = spaces_[last.space];
    const bool after_last = ls.first < s.first || (ls.first == s.first && ls.second < s.second) ||
                            (ls == s && KeyOf(last) < name.key);
    if (!after_last) at = LowerBound(s, name.key);
  }
  Entry e{space, 0, 0, 0};
  Append(name.key, json, &e);
  if (at < entries_.size() && Equals(entries_[at], s, name.key)) {
    Drop(entries_[at]);
    entries_[at] = e;
    CompactIfMostlyDead();
    return;
  }
  entries_.insert(entries_.begin() + static_cast<std::ptrdiff_t>(at), e);
}

void RowTable::Erase(const RowName& name) {
  const int64_t space = FindSpace(name.group, name.table);
  if (space < 0) return;
  const Space& s = spaces_[static_cast<size_t>(space)];
  const size_t at = LowerBound(s, name.key);
  if (at == entries_.size() || !Equals(entries_[at], s, name.key)) return;
  Drop(entries_[at]);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(at));
  CompactIfMostlyDead();
}

void RowTable::CompactIfMostlyDead() {
  if (dead_ < kMinDeadToCompact || dead_ < end_ / 2) return;
  // Into fresh blocks; the old ones are freed once every row is copied.
  const std::vector<std::unique_ptr<char[]>> old = std::exchange(blocks_, {});
  const auto at = [&old](uint32_t offset) {
    return old[offset >> kBlockBits].get() + (offset & (kBlockSize - 1));
  };
  block_bytes_ = 0;
  first_capacity_ = 0;
  end_ = 0;
  dead_ = 0;
  for (Entry& e : entries_) {
    const size_t size = e.key_size + e.value_size;
    std::memcpy(Room(size), at(e.offset), size);
    e.offset = static_cast<uint32_t>(end_);
    end_ += size;
  }
}

std::optional<std::string> RowTable::Get(const RowName& name) const {
  const int64_t space = FindSpace(name.group, name.table);
  if (space < 0) return std::nullopt;
  const Space& s = spaces_[static_cast<size_t>(space)];
  const size_t at = LowerBound(s, name.key);
  if (at == entries_.size() || !Equals(entries_[at], s, name.key)) return std::nullopt;
  std::string value;
  names_.Expand(ValueOf(entries_[at]), &value);
  return value;
}

std::vector<StoredRow> RowTable::Scan(std::string_view group, std::string_view table) const {
  std::vector<StoredRow> out;
  const int64_t space = FindSpace(group, table);
  if (space < 0) return out;
  const Space& s = spaces_[static_cast<size_t>(space)];
  for (size_t i = LowerBound(s, "");
       i < entries_.size() && entries_[i].space == static_cast<uint32_t>(space); ++i) {
    StoredRow& row = out.emplace_back();
    row.name = RowName{s.first, s.second, std::string(KeyOf(entries_[i]))};
    names_.Expand(ValueOf(entries_[i]), &row.value);
  }
  return out;
}

}  // namespace skiff::client::internal
