#include "store/channel_follower.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace skiff::store {

ChannelFollower::ChannelFollower(std::unique_ptr<ChangeListener> listener,
                                 std::chrono::milliseconds poll_interval, Logger& logger,
                                 std::string area, std::string what, Hooks hooks)
    : listener_(std::move(listener)),
      poll_interval_(poll_interval),
      logger_(logger),
      area_(std::move(area)),
      what_(std::move(what)),
      hooks_(std::move(hooks)) {}

ChannelFollower::~ChannelFollower() { Stop(); }

void ChannelFollower::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ChannelFollower::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  listener_->Interrupt();
  if (thread_.joinable()) thread_.join();
}

bool ChannelFollower::stopping() const {
  MutexLock lock(&mu_);
  return stopping_;
}

void ChannelFollower::Loop() {
  using Steady = std::chrono::steady_clock;
  constexpr std::chrono::milliseconds kRetryAfter(500);
  // Without a poll, the wait still returns now and then to see Stop().
  constexpr std::chrono::milliseconds kLongestWait(60000);
  const bool polls = poll_interval_.count() > 0;
  const std::chrono::milliseconds retry =
      polls ? std::min(poll_interval_, kRetryAfter) : kRetryAfter;
  // When the next read is due whatever the channel says: the poll, or a
  // retry of a read that failed.
  std::optional<Steady::time_point> due;
  if (polls) due = Steady::now() + poll_interval_;
  bool failing = false;
  while (!stopping()) {
    const auto left =
        due ? std::clamp(std::chrono::ceil<std::chrono::milliseconds>(*due - Steady::now()),
                         std::chrono::milliseconds(0), polls ? poll_interval_ : retry)
            : kLongestWait;
    Result<ChangeListener::Event> event = listener_->Wait(left);
    bool read = due && Steady::now() >= *due;
    if (event.ok()) {
      if (failing) Logf(logger_, LogLevel::kInfo, area_, "listening for %s again", what_.c_str());
      failing = false;
      // A new session may have missed notifications; one that names what
      // was read already (this instance's own commit, or one an earlier
      // read found) needs no read.
      read = read || event->new_session ||
             (event->notifications > 0 && hooks_.is_new(event->last_sync_id));
    } else {
      if (!failing) {
        Logf(logger_, LogLevel::kWarning, area_, "%s; %s until it is back",
             event.status().ToString().c_str(), polls ? "polling" : "reconnecting");
      }
      failing = true;
      // Before trying to reconnect; Stop() cuts it short.
      MutexLock lock(&mu_);
      if (!stopping_) cv_.WaitFor(mu_, retry);
    }
    if (stopping()) return;
    if (read) {
      due.reset();
      if (polls) due = Steady::now() + poll_interval_;
      if (Status s = hooks_.read(); !s.ok()) {
        Logf(logger_, LogLevel::kError, area_, "catching up on %s failed: %s", what_.c_str(),
             s.ToString().c_str());
        // What it was to read may be what no notification will announce
        // again (a new session's backlog): try again soon.
        due = Steady::now() + retry;
      }
    }
  }
}

}  // namespace skiff::store
