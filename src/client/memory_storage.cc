#include "client/memory_storage.h"

#include <algorithm>
#include <iterator>

namespace skiff::client {

Result<StoredState> MemoryStorage::Load() {
  StoredState state;
  state.rows.reserve(rows_.size());
  for (const auto& [name, value] : rows_) state.rows.push_back({name, value});
  state.outbox = outbox_;
  state.position = position_;
  state.last_seq = last_seq_;
  return state;
}

Status MemoryStorage::WriteLocal(const OutboxEntry& entry) {
  if (entry.value) {
    rows_[entry.name] = *entry.value;
  } else {
    rows_.erase(entry.name);
  }
  outbox_.push_back(entry);
  last_seq_ = std::max(last_seq_, entry.seq);
  return Status::Ok();
}

Status MemoryStorage::ApplyRemote(const std::vector<RowWrite>& rows, const SyncPosition& position) {
  // Pages come in key order: the hint past the last row makes each insert
  // constant time instead of a search (a wrong hint only costs the search).
  auto hint = rows_.end();
  for (const RowWrite& w : rows) {
    if (w.value) {
      const auto it = rows_.insert_or_assign(hint, w.name, *w.value);
      // The row after a new last row is end(): std::next would climb from
      // that rightmost node to the root to find it.
      hint = &*it == &*rows_.rbegin() ? rows_.end() : std::next(it);
    } else {
      hint = rows_.erase(w.name) > 0 ? rows_.end() : hint;
    }
  }
  position_ = position;
  return Status::Ok();
}

Status MemoryStorage::Acknowledge(uint64_t last_seq) {
  std::erase_if(outbox_, [&](const OutboxEntry& e) { return e.seq <= last_seq; });
  return Status::Ok();
}

}  // namespace skiff::client
