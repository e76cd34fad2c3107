// BootstrapFeed: the pages of one bootstrap on their way from the client's
// I/O thread, which reads each reply into rows as it arrives, to the
// device's thread, which applies them in order.
//
// The I/O thread may ask for the next page as soon as a reply names it,
// before it reads that reply's rows (BeginAskAhead), but only while the
// device has taken every page read before: a device that applies slower
// than pages arrive then asks for each page itself, so at most two read
// pages wait for it and one more is on its way. Pages come out in the order
// they were asked for (Ask numbers them), whatever order their replies or
// failures are pushed in: a request that fails at once reports before the
// page that asked for it is pushed. Thread-safe.
#ifndef SKIFF_CLIENT_INTERNAL_BOOTSTRAP_FEED_H_
#define SKIFF_CLIENT_INTERNAL_BOOTSTRAP_FEED_H_

#include <cstdint>
#include <map>
#include <utility>

#include "base/mutex.h"
#include "base/status.h"
#include "client/internal/bootstrap_page.h"

namespace skiff::client::internal {

class BootstrapFeed {
 public:
  struct Entry {
    Result<BootstrapPage> page;
    bool next_asked = false;  // the page after it was asked for already
  };

  // The number of the page about to be asked for, in asking order.
  uint64_t Ask() {
    MutexLock lock(&mu_);
    return asked_++;
  }

  // Whether the I/O thread, reading a page, may ask for the one after it
  // now. When true, the ask is in progress until EndAskAhead: Close waits
  // for it, so the client it goes through outlives it.
  bool BeginAskAhead() {
    MutexLock lock(&mu_);
    if (closed_ || !ready_.empty()) return false;
    ++asking_;
    return true;
  }
  void EndAskAhead() {
    {
      MutexLock lock(&mu_);
      --asking_;
      ++asked_ahead_;
    }
    cv_.SignalAll();
  }

  // The reply to request `number` (from Ask), read, or why there is none.
  void Push(uint64_t number, Result<BootstrapPage> page, bool next_asked) {
    {
      MutexLock lock(&mu_);
      ready_.emplace(number, Entry{std::move(page), next_asked});
    }
    cv_.SignalAll();
  }

  // The next page in asking order, once it is pushed.
  Entry Pop() {
    MutexLock lock(&mu_);
    auto next = ready_.end();
    while ((next = ready_.find(taken_)) == ready_.end()) cv_.Wait(mu_);
    Entry entry = std::move(next->second);
    ready_.erase(next);
    ++taken_;
    return entry;
  }

  // The bootstrap ended (done or failed): nothing more is asked ahead, and
  // an ask in progress is waited for. Returns how many requests the I/O
  // thread sent, for the device's request count.
  uint64_t Close() {
    MutexLock lock(&mu_);
    closed_ = true;
    while (asking_ > 0) cv_.Wait(mu_);
    return asked_ahead_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::map<uint64_t, Entry> ready_ SKIFF_GUARDED_BY(mu_);  // pushed, not taken, by number
  uint64_t asked_ SKIFF_GUARDED_BY(mu_) = 0;
  uint64_t taken_ SKIFF_GUARDED_BY(mu_) = 0;
  int asking_ SKIFF_GUARDED_BY(mu_) = 0;            // asks ahead in progress
  uint64_t asked_ahead_ SKIFF_GUARDED_BY(mu_) = 0;  // asks ahead sent
  bool closed_ SKIFF_GUARDED_BY(mu_) = false;
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_BOOTSTRAP_FEED_H_
