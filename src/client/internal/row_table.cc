#include "client/internal/row_table.h"

#include <algorithm>
#include <limits>

#include "base/check.h"

namespace skiff::client::internal {
namespace {

// Below this the arena is never rewritten: the copy would cost more than the
// bytes it frees.
constexpr size_t kMinDeadToCompact = 64 * 1024;

}  // namespace

void RowTable::Reserve(size_t rows, size_t bytes) {
  entries_.reserve(entries_.size() + rows);
  arena_.reserve(arena_.size() + bytes);
}

void RowTable::ShrinkToFit() {
  entries_.shrink_to_fit();
  arena_.shrink_to_fit();
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
  const size_t offset = arena_.size();
  if (arena_.capacity() < offset + key.size() + json.size()) {
    // Grow by a quarter, not double: the arena is most of a device's memory.
    arena_.reserve(std::max(offset + key.size() + json.size() + 64, offset + offset / 4));
  }
  arena_.append(key);
  names_.Compact(json, &arena_);
  SKIFF_CHECK(arena_.size() <= std::numeric_limits<uint32_t>::max());
  e->offset = static_cast<uint32_t>(offset);
  e->key_size = static_cast<uint32_t>(key.size());
  e->value_size = static_cast<uint32_t>(arena_.size() - offset - key.size());
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
  if (dead_ < kMinDeadToCompact || dead_ < arena_.size() / 2) return;
  std::string fresh;
  fresh.reserve(arena_.size() - dead_);
  for (Entry& e : entries_) {
    const size_t offset = fresh.size();
    fresh.append(arena_, e.offset, e.key_size + e.value_size);
    e.offset = static_cast<uint32_t>(offset);
  }
  arena_ = std::move(fresh);
  dead_ = 0;
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
