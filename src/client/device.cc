#include "client/device.h"

#include <utility>

#include "client/internal/replica.h"
#include "client/internal/sync_loop.h"

namespace skiff::client {

const char* SyncStateName(SyncState state) {
  switch (state) {
    case SyncState::kOffline:
      return "offline";
    case SyncState::kSyncing:
      return "syncing";
    case SyncState::kOnline:
      return "online";
  }
  return "?";
}

// The replica and the loop that syncs it; each guards itself. The loop is
// declared after the replica, so it stops before the replica goes.
class Device::Impl {
 public:
  Impl(const DeviceOptions& options, DeviceStorage& storage)
      : replica(storage), loop(options, replica) {}

  internal::Replica replica;
  internal::SyncLoop loop;
};

Result<std::unique_ptr<Device>> Device::Open(const DeviceOptions& options, DeviceStorage& storage) {
  if (options.sync && options.device_id.empty()) return BadRequest("a device needs an id");
  if (options.page == 0 || options.max_push == 0) {
    return BadRequest("page and max_push must be at least 1");
  }
  auto impl = std::make_unique<Impl>(options, storage);
  SKIFF_RETURN_IF_ERROR(impl->replica.Load());
  if (options.sync) impl->loop.Start();
  return std::unique_ptr<Device>(new Device(std::move(impl)));
}

Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Device::~Device() = default;
void Device::Close() { impl_->loop.Close(); }

std::optional<std::string> Device::Get(const RowName& name) const {
  return impl_->replica.Get(name);
}
std::vector<StoredRow> Device::Scan(std::string_view group, std::string_view table) const {
  return impl_->replica.Scan(group, table);
}
size_t Device::row_count() const { return impl_->replica.row_count(); }

Status Device::Put(const RowName& name, const doc::Value& value) {
  SKIFF_RETURN_IF_ERROR(impl_->replica.Write(name, value.dump()));
  impl_->loop.Poke();
  return Status::Ok();
}
Status Device::Delete(const RowName& name) {
  SKIFF_RETURN_IF_ERROR(impl_->replica.Write(name, std::nullopt));
  impl_->loop.Poke();
  return Status::Ok();
}

SyncState Device::state() const { return impl_->loop.state(); }
size_t Device::outbox_size() const { return impl_->replica.outbox_size(); }
uint64_t Device::cursor() const { return impl_->replica.position().cursor; }
Status Device::last_error() const { return impl_->loop.last_error(); }
DeviceCounters Device::counters() const { return impl_->loop.counters(); }
DeviceCounters Device::synced_counters() const { return impl_->loop.synced_counters(); }
Status Device::WaitUntilSynced(std::chrono::milliseconds timeout) {
  return impl_->loop.WaitUntilSynced(timeout);
}
Status Device::WaitUntilUpToDate(std::chrono::milliseconds timeout) {
  return impl_->loop.WaitUntilUpToDate(timeout);
}

}  // namespace skiff::client
