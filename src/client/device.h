// Device: an application's synced copy of the rows its user may see.
//
// Open loads the rows, the outbox and the sync position from a DeviceStorage;
// the device is ready when Open returns, and serves reads and scans from
// memory. Writes apply locally at once (row and outbox entry in one storage
// transaction) and reach the server through a sync loop thread: push the
// outbox, pull what changed, hold a wait until something else changes,
// repeat, backing off exponentially on errors. Pulled changes apply under
// the pending outbox, so a device's unconfirmed writes stay visible until
// the server confirms or overrides them; the server's order decides the
// final value of a row (docs/sync.md).
//
// Outbox entries the server refuses for good (forbidden, bad_request,
// too_large) are dropped and counted in `rejected`; the local row keeps the
// refused value until the server next changes that row.
//
// A device is a replica (internal/replica.h: rows and outbox on the
// storage, no wire, no threads) and a sync loop (internal/sync_loop.h: the
// thread that talks to the server through Client's typed sync calls).
//
// Thread-safe: any thread may call any method; the storage is used under the
// replica's lock only.
#ifndef SKIFF_CLIENT_DEVICE_H_
#define SKIFF_CLIENT_DEVICE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "client/device_storage.h"
#include "doc/document.h"

namespace skiff::client {

struct DeviceOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 7420;
  // wss://, as ClientOptions' fields of the same names.
  bool tls = false;
  std::string tls_ca_file;
  bool tls_insecure = false;  // tests only
  std::string user;
  std::string secret;
  // The device's id (up to 256 bytes); it belongs to the user who first
  // pushes with it. Required when `sync` is on.
  std::string device_id;
  // Off: local rows only, no connection (the device stays offline).
  bool sync = true;
  size_t page = 1000;     // rows per bootstrap page and changes per pull
  size_t max_push = 500;  // outbox entries per push
  // How long the server holds the device's wait (at most 60 s).
  std::chrono::milliseconds wait_timeout{20000};
  // Requests other than the wait fail after this long.
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds backoff_min{50};
  std::chrono::milliseconds backoff_max{5000};
  // The time of the back-off and of WaitUntilSynced/WaitUntilUpToDate
  // (tests pass a ManualClock); null: the system's. Outlives the device.
  const Clock* clock = nullptr;
};

enum class SyncState {
  kOffline,  // not connected (never, or the last attempt failed)
  kSyncing,  // connected, exchanging changes
  kOnline,   // connected, outbox empty, up to date as of the last pull
};
const char* SyncStateName(SyncState state);

// What a device did since it opened. Requests and bytes are counted on the
// wire by the client (login and failed requests included).
struct DeviceCounters {
  uint64_t requests = 0;  // push + pull + bootstrap + wait
  uint64_t pushes = 0;
  uint64_t pulls = 0;
  uint64_t bootstraps = 0;
  uint64_t waits = 0;
  uint64_t rows_received = 0;     // bootstrap rows
  uint64_t changes_received = 0;  // pulled changes
  uint64_t changes_pushed = 0;    // outbox entries the server applied or had
  uint64_t rejected = 0;          // outbox entries refused for good
  uint64_t connects = 0;
  uint64_t frames_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t frames_received = 0;
  uint64_t bytes_received = 0;
};

class Device {
 public:
  // Loads the storage (the device is ready on return) and, when
  // options.sync is set, starts the sync loop. bad_request without a device
  // id; the storage's error when it cannot be read.
  static Result<std::unique_ptr<Device>> Open(const DeviceOptions& options, DeviceStorage& storage);
  ~Device();  // Close()
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Stops the sync loop and closes the connection. Idempotent.
  void Close();

  // The row's JSON text, or nullopt when the device has no such row.
  std::optional<std::string> Get(const RowName& name) const;
  // The rows of one table of one group, in key order.
  std::vector<StoredRow> Scan(std::string_view group, std::string_view table) const;
  size_t row_count() const;

  // Writes locally and queues the change for the server. bad_request for an
  // invalid name; the storage's error (nothing changed) when it fails.
  Status Put(const RowName& name, const doc::Value& value);
  Status Delete(const RowName& name);

  SyncState state() const;
  size_t outbox_size() const;
  uint64_t cursor() const;
  // The last error of the sync loop (OK when the last round succeeded).
  Status last_error() const;
  DeviceCounters counters() const;
  // The counters as they stood when the device last became up to date.
  DeviceCounters synced_counters() const;

  // Blocks until a sync round that started after this call has pushed the
  // whole outbox and pulled (interrupting a held wait to start one).
  // unavailable after `timeout`, with the loop's last error.
  Status WaitUntilSynced(std::chrono::milliseconds timeout);
  // Blocks until the device has been up to date once since it opened (a
  // new device: bootstrapped and pulled), without starting a round of its
  // own. unavailable after `timeout`.
  Status WaitUntilUpToDate(std::chrono::milliseconds timeout);

 private:
  class Impl;
  explicit Device(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skiff::client

#endif  // SKIFF_CLIENT_DEVICE_H_
