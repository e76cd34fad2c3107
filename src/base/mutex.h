// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with
// the attributes clang's thread-safety analysis needs (base/thread_annotations.h).
//
// The standard types cost nothing extra here: each wrapper holds exactly the
// standard object and forwards inline. Members a Mutex protects are declared
// SKIFF_GUARDED_BY it, and the build with -Wthread-safety (the `thread-safety`
// preset) fails when one is touched without it. Thread-safe, as the types
// they wrap.
#ifndef SKIFF_BASE_MUTEX_H_
#define SKIFF_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/thread_annotations.h"

namespace skiff {

class CondVar;

// A non-recursive exclusive lock. Prefer MutexLock to calling Lock/Unlock.
class SKIFF_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() SKIFF_ACQUIRE() { mu_.lock(); }
  void Unlock() SKIFF_RELEASE() { mu_.unlock(); }
  // Tells the analysis the caller holds the lock where it cannot see it; no
  // run-time check (std::mutex does not know its owner).
  void AssertHeld() const SKIFF_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction. Unlock() and Lock() give it
// up for a stretch in the middle (a store call made without the lock); the
// destructor releases it only if held.
class SKIFF_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) SKIFF_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() SKIFF_RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() SKIFF_RELEASE() {
    mu_->Unlock();
    held_ = false;
  }
  void Lock() SKIFF_ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// A condition variable for a Mutex the caller holds. There are no predicate
// overloads: a predicate lambda reading guarded members is analysed as a
// function of its own that holds nothing, so callers loop instead,
// `while (!ready_) cv_.Wait(mu_);`, which the analysis can check.
class CondVar {
 public:
  using Clock = std::chrono::steady_clock;

  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu` while blocked and holds it again on return, which may be
  // spurious.
  void Wait(Mutex& mu) SKIFF_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // the caller still owns the lock
  }
  // As Wait, and also returns at `deadline`. True if it returned before it
  // (woken, perhaps spuriously), false at the deadline.
  bool WaitUntil(Mutex& mu, Clock::time_point deadline) SKIFF_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  // WaitUntil(now + timeout).
  template <typename Rep, typename Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout) SKIFF_REQUIRES(mu) {
    return WaitUntil(mu, Clock::now() + timeout);
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace skiff

#endif  // SKIFF_BASE_MUTEX_H_
