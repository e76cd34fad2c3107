#include "client/internal/replica.h"

#include <algorithm>
#include <utility>

#include "doc/names.h"

namespace skiff::client::internal {
namespace {

Status ValidateName(const RowName& name) {
  SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(name.group));
  SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(name.table));
  return doc::ValidateKey(name.key);
}

}  // namespace

Status Replica::Load() {
  SKIFF_ASSIGN_OR_RETURN(StoredState state, storage_.Load());
  MutexLock lock(&mu_);
  rows_.Reserve(state.rows.size());
  for (const StoredRow& row : state.rows) rows_.Put(row.name, row.value);
  rows_.ShrinkToFit();
  for (OutboxEntry& e : state.outbox) {
    ++pending_[e.name];
    outbox_.push_back(std::move(e));
  }
  position_ = state.position;
  last_seq_ = std::max(state.last_seq, outbox_.empty() ? 0 : outbox_.back().seq);
  return Status::Ok();
}

std::optional<std::string> Replica::Get(const RowName& name) const {
  MutexLock lock(&mu_);
  return rows_.Get(name);
}

std::vector<StoredRow> Replica::Scan(std::string_view group, std::string_view table) const {
  MutexLock lock(&mu_);
  return rows_.Scan(group, table);
}

size_t Replica::row_count() const {
  MutexLock lock(&mu_);
  return rows_.size();
}

Status Replica::Write(const RowName& name, std::optional<std::string> value) {
  SKIFF_RETURN_IF_ERROR(ValidateName(name));
  MutexLock lock(&mu_);
  OutboxEntry entry{last_seq_ + 1, name, std::move(value)};
  SKIFF_RETURN_IF_ERROR(storage_.WriteLocal(entry));
  last_seq_ = entry.seq;
  if (entry.value) {
    rows_.Put(name, *entry.value);
  } else {
    rows_.Erase(name);
  }
  ++pending_[name];
  outbox_.push_back(std::move(entry));
  return Status::Ok();
}

size_t Replica::outbox_size() const {
  MutexLock lock(&mu_);
  return outbox_.size();
}

std::vector<OutboxEntry> Replica::Outbox(size_t max) const {
  MutexLock lock(&mu_);
  const size_t n = std::min(outbox_.size(), max);
  return std::vector<OutboxEntry>(outbox_.begin(), outbox_.begin() + static_cast<ptrdiff_t>(n));
}

Result<size_t> Replica::Acknowledge(uint64_t last_seq) {
  MutexLock lock(&mu_);
  SKIFF_RETURN_IF_ERROR(storage_.Acknowledge(last_seq));
  size_t dropped = 0;
  while (!outbox_.empty() && outbox_.front().seq <= last_seq) {
    auto p = pending_.find(outbox_.front().name);
    if (p != pending_.end() && --p->second == 0) pending_.erase(p);
    outbox_.pop_front();
    ++dropped;
  }
  return dropped;
}

SyncPosition Replica::position() const {
  MutexLock lock(&mu_);
  return position_;
}

Status Replica::ApplyRemote(std::vector<RowWrite> writes, const SyncPosition& position) {
  MutexLock lock(&mu_);
  std::erase_if(writes,
                [&](const RowWrite& w) SKIFF_REQUIRES(mu_) { return pending_.count(w.name) > 0; });
  SKIFF_RETURN_IF_ERROR(storage_.ApplyRemote(writes, position));
  for (const RowWrite& w : writes) {
    if (w.value) {
      rows_.Put(w.name, *w.value);
    } else {
      rows_.Erase(w.name);
    }
  }
  position_ = position;
  return Status::Ok();
}

}  // namespace skiff::client::internal
