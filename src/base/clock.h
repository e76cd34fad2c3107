// Clock: where every piece of Skiff that reasons about time gets it.
//
// Tier moves, held-wait timeouts, flush intervals and stop deadlines read
// time through a Clock, and a thread that sleeps until such a deadline
// sleeps through Clock::WaitUntil, so tests drive them with ManualClock
// instead of sleeping. SystemClock and ManualClock are thread-safe.
#ifndef SKIFF_BASE_CLOCK_H_
#define SKIFF_BASE_CLOCK_H_

#include <atomic>
#include <chrono>

#include <time.h>

#include "base/mutex.h"
#include "base/thread_annotations.h"

namespace skiff {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  // Time since an arbitrary fixed epoch; never goes backwards.
  using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // The same time at a few milliseconds' resolution, for bookkeeping read
  // on every request (when a document or a connection was last used) that
  // is only ever compared with idle limits of seconds. Never later than
  // Now() and never goes backwards.
  virtual TimePoint NowCoarse() const { return Now(); }

  // Blocks on `cv`, releasing `mu` (held by the caller) meanwhile, until it
  // is signalled or this clock reaches `deadline`. True if it returned
  // before the deadline (woken, perhaps spuriously), false once the
  // deadline is reached: callers loop on their condition, as with
  // CondVar::WaitUntil. This default suits any clock: it sleeps in short
  // real-time slices and reads Now() after each, so a clock moved by hand
  // ends the wait within a slice.
  virtual bool WaitUntil(CondVar& cv, Mutex& mu, TimePoint deadline) const SKIFF_REQUIRES(mu) {
    if (Now() >= deadline) return false;
    cv.WaitFor(mu, kWaitSlice);
    return Now() < deadline;
  }

 protected:
  static constexpr std::chrono::milliseconds kWaitSlice{2};
};

// Monotonic wall time (std::chrono::steady_clock, which is CLOCK_MONOTONIC).
class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  // CLOCK_MONOTONIC_COARSE: the same clock, read from the kernel's last tick
  // without the hardware counter, several times cheaper.
  TimePoint NowCoarse() const override {
    timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return Now();
    return TimePoint(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  }
  // The condition variable's own clock is this one: one exact wait.
  bool WaitUntil(CondVar& cv, Mutex& mu, TimePoint deadline) const SKIFF_REQUIRES(mu) override {
    return cv.WaitUntil(
        mu, std::chrono::time_point_cast<std::chrono::steady_clock::duration>(deadline));
  }
};

// Time that moves only when a test says so.
class ManualClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(Duration(now_ns_.load())); }
  void Advance(Duration d) { now_ns_.fetch_add(d.count()); }

 private:
  std::atomic<Duration::rep> now_ns_{1};
};

}  // namespace skiff

#endif  // SKIFF_BASE_CLOCK_H_
