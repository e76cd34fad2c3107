// MemoryStorage: a DeviceStorage kept in process memory. It outlives the
// Devices opened on it, so an application (or a test) can close a Device and
// open another on the same storage; nothing survives the process. Runs no
// statements. Not thread-safe (see device_storage.h).
#ifndef SKIFF_CLIENT_MEMORY_STORAGE_H_
#define SKIFF_CLIENT_MEMORY_STORAGE_H_

#include <map>
#include <string>
#include <vector>

#include "client/device_storage.h"

namespace skiff::client {

class MemoryStorage final : public DeviceStorage {
 public:
  Result<StoredState> Load() override;
  Status WriteLocal(const OutboxEntry& entry) override;
  Status ApplyRemote(const std::vector<RowWrite>& rows, const SyncPosition& position) override;
  Status Acknowledge(uint64_t last_seq) override;
  uint64_t statements() const override { return 0; }

 private:
  std::map<RowName, std::string> rows_;
  std::vector<OutboxEntry> outbox_;
  SyncPosition position_;
  uint64_t last_seq_ = 0;
};

}  // namespace skiff::client

#endif  // SKIFF_CLIENT_MEMORY_STORAGE_H_
