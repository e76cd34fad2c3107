// BootstrapFeed: the pages of one bootstrap on their way from the client's
// I/O thread, which reads each reply into rows as it arrives, to the
// device's thread, which applies them in order.
//
// The I/O thread may ask for the next page as soon as a reply names it,
// before it reads that reply's rows (MayAskAhead), but only while the
// device has taken every page read before: a device that applies slower
// than pages arrive then asks for each page itself, so at most two read
// pages wait for it and one more is on its way. Pages come out in the order
// they were pushed; the client runs its callbacks on one thread, in the
// order the replies arrive. Thread-safe.
#ifndef SKIFF_CLIENT_INTERNAL_BOOTSTRAP_FEED_H_
#define SKIFF_CLIENT_INTERNAL_BOOTSTRAP_FEED_H_

#include <deque>
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

  // Whether the I/O thread, reading a page, may ask for the one after it.
  bool MayAskAhead() {
    MutexLock lock(&mu_);
    return !closed_ && ready_.empty();
  }

  void Push(Result<BootstrapPage> page, bool next_asked) {
    {
      MutexLock lock(&mu_);
      ready_.push_back(Entry{std::move(page), next_asked});
    }
    cv_.Signal();
  }

  // The next page, once it is read.
  Entry Pop() {
    MutexLock lock(&mu_);
    while (ready_.empty()) cv_.Wait(mu_);
    Entry entry = std::move(ready_.front());
    ready_.pop_front();
    return entry;
  }

  // The bootstrap ended (done or failed): nothing more is asked ahead.
  void Close() {
    MutexLock lock(&mu_);
    closed_ = true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<Entry> ready_ SKIFF_GUARDED_BY(mu_);
  bool closed_ SKIFF_GUARDED_BY(mu_) = false;
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_BOOTSTRAP_FEED_H_
