// StoreWorkers: threads that run the requests which must wait for the
// store (a login, a scan, a sync pull or bootstrap, a read of a document
// not in memory), so that no I/O thread ever blocks on a store call: a slow
// or frozen store then delays those requests, while pings, cached reads and
// new connections are served on.
//
// Work is queued in FIFO order per worker; Post(hint, fn) picks a worker by
// `hint`. The queue is bounded by the callers (each connection has at most
// one request here at a time). Thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_STORE_WORKERS_H_
#define SKIFF_SERVER_INTERNAL_STORE_WORKERS_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace skiff::server::internal {

class StoreWorkers {
 public:
  explicit StoreWorkers(size_t threads);
  ~StoreWorkers();  // Stop()
  StoreWorkers(const StoreWorkers&) = delete;
  StoreWorkers& operator=(const StoreWorkers&) = delete;

  // Runs fn on worker `hint % threads`, after what was queued there before.
  // Once stopping, fn runs on the caller's thread instead.
  void Post(size_t hint, std::function<void()> fn);

  // Runs what is queued, then joins the threads. Idempotent.
  void Stop();

 private:
  struct Worker {
    Mutex mu;
    CondVar cv;
    std::deque<std::function<void()>> queue SKIFF_GUARDED_BY(mu);
    bool stopping SKIFF_GUARDED_BY(mu) = false;
    std::thread thread;
  };
  static void Run(Worker& w);

  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_STORE_WORKERS_H_
