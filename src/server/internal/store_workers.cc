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
    std::lock_guard<std::mutex> lock(w.mu);
    if (!w.stopping) {
      w.queue.push_back(std::move(fn));
      w.cv.notify_one();
      return;
    }
  }
  fn();
}

void StoreWorkers::Stop() {
  for (auto& w : workers_) {
    std::lock_guard<std::mutex> lock(w->mu);
    w->stopping = true;
    w->cv.notify_one();
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

void StoreWorkers::Run(Worker& w) {
  std::unique_lock<std::mutex> lock(w.mu);
  for (;;) {
    w.cv.wait(lock, [&] { return w.stopping || !w.queue.empty(); });
    if (w.queue.empty()) return;  // stopping, and everything queued has run
    std::function<void()> fn = std::move(w.queue.front());
    w.queue.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace skiff::server::internal
