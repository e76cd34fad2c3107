#include "sync/local_sync_log.h"

#include <optional>

namespace skiff::sync {

void LocalSyncLog::Start(Host& host, uint64_t /*last*/) { host_ = &host; }

Status LocalSyncLog::Prepare() {
  // A failed commit whose state could not be read then: nothing is numbered
  // until it is.
  return needs_resync_ ? Resync() : Status::Ok();
}

Result<uint64_t> LocalSyncLog::Commit(const std::vector<std::string>& /*devices*/,
                                      const Build& build, SyncBatch* built) {
  build(
      host_->cursor() + 1,
      [this](const std::string& device) -> Result<std::optional<DeviceState>> {
        using Found = std::optional<DeviceState>;
        if (auto d = devices_.find(device); d != devices_.end()) return Found(d->second);
        // The first push of a device since start: one read of its record.
        SKIFF_ASSIGN_OR_RETURN(std::optional<store::DeviceSeq> record, store_.GetDevice(device));
        if (!record.has_value()) return Found();
        return Found(DeviceState{record->user, record->last_seq});
      },
      built);
  if (!built->batch.empty()) SKIFF_RETURN_IF_ERROR(store_.Write(built->batch));
  return built->next_id - 1;
}

void LocalSyncLog::Committed(const SyncBatch& built, uint64_t /*last*/) {
  for (const auto& [device, state] : built.touched_devices) devices_[device] = state;
}

void LocalSyncLog::Failed() {
  // Whatever the store said, the committed state is read again before
  // anything is numbered: an outcome_unknown commit may have landed.
  if (!Resync().ok()) needs_resync_ = true;
}

Status LocalSyncLog::Resync() {
  SKIFF_ASSIGN_OR_RETURN(uint64_t last, store_.LastSyncId());
  SKIFF_ASSIGN_OR_RETURN(auto by_group, store_.LastSyncIdByGroup());
  devices_.clear();  // their sequences may or may not have landed: read them again
  host_->Advance(last, by_group);
  needs_resync_ = false;
  return Status::Ok();
}

}  // namespace skiff::sync
