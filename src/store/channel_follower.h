// ChannelFollower: a thread that reads what other cluster instances
// committed whenever a ChangeListener's channel says something new came,
// after the listener's connection came back (NOTIFY has no replay: a
// notification sent meanwhile is gone), and, when it polls, every
// `poll_interval` anyway (a notification its sender failed to send). The
// sync engine's cluster log (sync commits) and the cluster's watch feed
// (changes of watched tables) each run one.
//
// The poll runs on real time (std::chrono::steady_clock), not on a Clock:
// it paces reads of the store and waits on the LISTEN socket, which a
// manual clock cannot move, and no test drives it by hand.
//
// Thread-safety: Start once, Stop from any thread (also from the
// destructor); the hooks run on the follower's thread.
#ifndef SKIFF_STORE_CHANNEL_FOLLOWER_H_
#define SKIFF_STORE_CHANNEL_FOLLOWER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/logger.h"
#include "base/mutex.h"
#include "base/status.h"
#include "store/change_listener.h"

namespace skiff::store {

class ChannelFollower {
 public:
  struct Hooks {
    // Whether a notification naming `named` (its payload's id or version)
    // needs a read: not when what it names was read already.
    std::function<bool(uint64_t named)> is_new;
    // Reads what is new; an error is logged and the read retried soon.
    std::function<Status()> read;
  };
  // `area` and `what` name it in the log ("sync", "other servers' commits").
  // A `poll_interval` of 0 reads only when the channel says so or the
  // listener reconnected: for a channel whose notifications are sent by
  // the commits themselves, which only a lost connection can lose.
  ChannelFollower(std::unique_ptr<ChangeListener> listener, std::chrono::milliseconds poll_interval,
                  Logger& logger, std::string area, std::string what, Hooks hooks);
  ~ChannelFollower();  // Stop()
  ChannelFollower(const ChannelFollower&) = delete;
  ChannelFollower& operator=(const ChannelFollower&) = delete;

  void Start();
  // Ends the thread; may wait for a reconnect in progress (libpq's
  // connect_timeout).
  void Stop();

 private:
  void Loop();
  bool stopping() const;

  const std::unique_ptr<ChangeListener> listener_;
  const std::chrono::milliseconds poll_interval_;
  Logger& logger_;
  const std::string area_;
  const std::string what_;
  const Hooks hooks_;
  mutable Mutex mu_;
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  CondVar cv_;
  std::thread thread_;
};

}  // namespace skiff::store

#endif  // SKIFF_STORE_CHANNEL_FOLLOWER_H_
