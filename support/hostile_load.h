// HostileLoad: clients that do what no well-behaved one would, run on a
// thread of their own against a server on 127.0.0.1, so that a benchmark can
// measure what a well-behaved client sees beside them (bench/hostile_bench).
//
//   kNeverReads            handshaken connections with a small receive
//                          buffer that send 20 KB echo requests without
//                          ever reading a reply
//   kSlowFrames            handshaken connections that each announce an
//                          8 MiB frame and send its payload a few KiB at a
//                          time, never finishing it
//   kUnfinishedHandshakes  connections that send half an HTTP upgrade
//                          request and nothing more
//   kIdleConnections       handshaken connections that say nothing
//
// A connection the server ends (a send timeout, a handshake deadline) is
// opened again, so the load stays in place for as long as it runs; the
// counters tell the connections held open since the load was first in
// place from those the server ended, so a case can assert which happened.
// Start() returns once every connection is in place; the load then runs
// until Stop() or the destructor. Every loop is bounded by Stop() and by a
// poll timeout of a few tens of milliseconds.
#ifndef SKIFF_SUPPORT_HOSTILE_LOAD_H_
#define SKIFF_SUPPORT_HOSTILE_LOAD_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "base/mutex.h"
#include "base/status.h"

namespace skiff::bench {

enum class HostileKind { kNeverReads, kSlowFrames, kUnfinishedHandshakes, kIdleConnections };

// "never-reads", "slow-frames", "unfinished-handshakes", "idle-connections".
std::string_view HostileName(HostileKind kind);

struct HostileCounters {
  uint64_t bytes_sent = 0;  // everything the server's sockets took
  // Connections the server ended (each opened again, but for idle ones).
  uint64_t reopened = 0;
  size_t open = 0;  // connections open now
  // Of those, the ones open since the load was first in place: never
  // ended since.
  size_t held = 0;
  // Connections the server ended since the load was first in place.
  uint64_t ended_since_in_place = 0;
};

class HostileLoad {
 public:
  HostileLoad(HostileKind kind, uint16_t port, size_t connections);
  ~HostileLoad();  // Stop()
  HostileLoad(const HostileLoad&) = delete;
  HostileLoad& operator=(const HostileLoad&) = delete;

  // Opens the connections and starts the load; returns once every
  // connection is in place (for kNeverReads: the server stopped taking its
  // bytes), or unavailable after `timeout`.
  Status Start(std::chrono::milliseconds timeout);
  // Ends the load and closes its connections. Idempotent.
  void Stop();

  HostileCounters counters() const;

 private:
  class Runner;
  void Run();

  const HostileKind kind_;
  const uint16_t port_;
  const size_t connections_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable Mutex mu_;
  CondVar in_place_cv_;
  bool in_place_ SKIFF_GUARDED_BY(mu_) = false;
  std::string error_ SKIFF_GUARDED_BY(mu_);
  HostileCounters counters_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_HOSTILE_LOAD_H_
