#include "server/internal/store_workers.h"

#include <algorithm>
#include <utility>

namespace skiff::server::internal {

StoreWorkers::StoreWorkers(size_t threads) {
  for (size_t i = 0; i < std::max<size_t>(1, threads); ++i) {
    auto w = std::make_unique<Worker>();
    w->thread = std::thread([p = w.get()] { Run(*p); });
    workers_.push_back(std::move(w));
  }
}

StoreWorkers::~StoreWorkers() { Stop(); }

void StoreWorkers::Post(size_t hint, std::function<void()> fn) {
  Worker& w = *workers_[hint % workers_.size()];
  {
    MutexLock lock(&w.mu);
    if (!w.stopping) {
      w.queue.push_back(std::move(fn));
      w.cv.Signal();
      return;
    }
  }
  fn();
}

void StoreWorkers::Stop() {
  for (auto& w : workers_) {
    MutexLock lock(&w->mu);
    w->stopping = true;
    w->cv.Signal();
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

void StoreWorkers::Run(Worker& w) {
  MutexLock lock(&w.mu);
  for (;;) {
    while (!w.stopping && w.queue.empty()) w.cv.Wait(w.mu);
    if (w.queue.empty()) return;  // stopping, and everything queued has run
    std::function<void()> fn = std::move(w.queue.front());
    w.queue.pop_front();
    lock.Unlock();
    fn();
    lock.Lock();
  }
}

}  // namespace skiff::server::internal
