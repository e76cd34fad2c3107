// SyncLoop: the thread that keeps a device's replica in step with the
// server, through Client's typed sync calls: push the outbox, bootstrap
// once, pull what changed, hold a wait until something else changes,
// repeat, backing off exponentially on errors (device.h says what a device
// promises; docs/sync.md why).
//
// Thread-safe: any thread may call any method. The loop's own state is
// guarded by `mu_`; the replica guards itself and is never called with
// `mu_` held, except for its outbox size (lock order: `mu_`, then the
// replica's).
#ifndef SKIFF_CLIENT_INTERNAL_SYNC_LOOP_H_
#define SKIFF_CLIENT_INTERNAL_SYNC_LOOP_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "client/client.h"
#include "client/device.h"
#include "client/internal/bootstrap_feed.h"
#include "client/internal/replica.h"

namespace skiff::client::internal {

class SyncLoop {
 public:
  SyncLoop(const DeviceOptions& options, Replica& replica)
      : options_(options),
        clock_(options.clock != nullptr ? *options.clock : system_clock_),
        replica_(replica) {}
  ~SyncLoop() { Close(); }
  SyncLoop(const SyncLoop&) = delete;
  SyncLoop& operator=(const SyncLoop&) = delete;

  // Starts the loop's thread (once, when options.sync is set).
  void Start();
  // Stops the loop and closes its connection; a request in flight fails at
  // once. Idempotent.
  void Close();
  // Something to push: start a round now (interrupting a held wait).
  void Poke();

  SyncState state() const;
  Status last_error() const;
  DeviceCounters counters() const;
  DeviceCounters synced_counters() const;
  // As Device's (device.h); bad_request when the device does not sync.
  Status WaitUntilSynced(std::chrono::milliseconds timeout);
  Status WaitUntilUpToDate(std::chrono::milliseconds timeout);

 private:
  // The reply of a wait in flight.
  struct WaitSlot {
    bool done = false;
    std::optional<Status> reply;
  };

  DeviceCounters CountersLocked() const SKIFF_REQUIRES(mu_);
  void Loop();
  void DropClient();
  Status Connect();
  Status Round();
  Status Idle();
  Status HoldWait(uint64_t since);
  Status BootstrapAll();
  // Asks for the bootstrap page after `after`; static, as it runs on the
  // client's I/O thread too and touches nothing of the loop.
  static void AskForPage(Client* client, size_t limit, const std::optional<RowName>& after,
                         const std::shared_ptr<BootstrapFeed>& feed);
  Status PullAll();
  Status PushAll();
  void CountRequest(uint64_t DeviceCounters::*op);

  const DeviceOptions options_;
  SystemClock system_clock_;  // the clock unless the options name one
  const Clock& clock_;        // the back-off's and the waits' time
  Replica& replica_;

  mutable Mutex mu_;
  CondVar cv_;
  SyncState state_ SKIFF_GUARDED_BY(mu_) = SyncState::kOffline;
  Status last_error_ SKIFF_GUARDED_BY(mu_);
  DeviceCounters counters_ SKIFF_GUARDED_BY(mu_);
  DeviceCounters synced_counters_ SKIFF_GUARDED_BY(mu_);
  WireCounters wire_done_ SKIFF_GUARDED_BY(mu_);  // of clients dropped
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  bool poked_ SKIFF_GUARDED_BY(mu_) = false;  // a write or a sync request
  uint64_t rounds_started_ SKIFF_GUARDED_BY(mu_) = 0;
  uint64_t round_ SKIFF_GUARDED_BY(mu_) = 0;         // the current round
  uint64_t synced_round_ SKIFF_GUARDED_BY(mu_) = 0;  // last round that got up to date
  // Outbox entries per push: one at a time from the start and after a
  // refusal (to find the refused entry), max_push once the outbox emptied.
  size_t push_limit_ SKIFF_GUARDED_BY(mu_) = 0;
  std::shared_ptr<WaitSlot> wait_slot_ SKIFF_GUARDED_BY(mu_);  // the wait in flight
  // Written by the loop thread under mu_; the loop reads it without the lock.
  // Shared so Close can shut it down (failing a request in flight at once)
  // while the loop thread may be dropping it.
  std::shared_ptr<Client> client_;
  std::thread thread_;
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_SYNC_LOOP_H_
