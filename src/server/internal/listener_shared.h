// ListenerShared: what every connection of one listener shares: its options,
// the handler, the clock, the logger, the connection counts and the buffer
// budget.
//
// Counters are atomic; the per-address table has its own mutex. Thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_LISTENER_SHARED_H_
#define SKIFF_SERVER_INTERNAL_LISTENER_SHARED_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "base/logger.h"
#include "base/mutex.h"
#include "server/internal/listener.h"

namespace skiff::server::internal {

struct ListenerShared {
  ListenerShared(const ListenerOptions& o, ListenerHandler& h, const Clock& c, Logger& l)
      : options(o), handler(h), clock(c), logger(l) {}

  int64_t NowNs() const { return clock.NowCoarse().time_since_epoch().count(); }

  // Buffered input and output of every connection together is over budget.
  bool OverBudget() const {
    return input_bytes.load(std::memory_order_relaxed) +
               output_bytes.load(std::memory_order_relaxed) >
           static_cast<int64_t>(options.max_buffered_bytes);
  }

  // Takes a place for a new connection from `address_key` (empty: no
  // per-address limit); false, with the refusal's words in *why, when a
  // limit is reached.
  bool Admit(const std::string& address_key, std::string* why);
  // Gives back the place Admit took.
  void Release(const std::string& address_key);

  const ListenerOptions options;
  ListenerHandler& handler;
  const Clock& clock;
  Logger& logger;
  size_t max_connections = 0;  // the limit in force (set by the listener)

  std::atomic<uint64_t> connections{0};
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> descriptor_exhaustion{0};
  std::atomic<uint64_t> handshake_failures{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> tls_failures{0};
  std::atomic<uint64_t> frame_timeouts{0};
  std::atomic<uint64_t> send_timeouts{0};
  std::atomic<uint64_t> idle_closes{0};
  std::atomic<uint64_t> health_checks{0};
  // Sends handed to the kernel together (SendRing), and the system calls
  // they took.
  std::atomic<uint64_t> batched_sends{0};
  std::atomic<uint64_t> batch_system_calls{0};
  std::atomic<int64_t> paused{0};
  std::atomic<int64_t> refusing{0};  // refused connections still being answered
  std::atomic<int64_t> input_bytes{0};
  std::atomic<int64_t> output_bytes{0};

  // Signalled whenever a connection ends, for Shutdown's wait.
  Mutex closed_mu;
  CondVar closed_cv;

 private:
  Mutex address_mu_;
  std::unordered_map<std::string, size_t> per_address_ SKIFF_GUARDED_BY(address_mu_);
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_LISTENER_SHARED_H_
