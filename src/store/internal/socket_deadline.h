// SocketDeadline: bounds how long one blocking call on a socket may take,
// whatever the peer does. libpq blocks in recv() with no timeout of its own
// once connected, and a frozen server (SIGSTOP) or a dead link never
// answers while its kernel, or nobody, keeps the TCP connection open; TCP
// keepalives and tcp_user_timeout cannot see a frozen process at all.
//
// A caller arms the deadline around its call; a thread of the object's own
// checks the armed call every `period` and, once it is past its deadline,
// shuts the socket down (shutdown(2), not close: the descriptor stays the
// caller's, so it cannot be reused under it). The blocked call then fails
// as if the connection had been lost, and the caller reconnects. Arming
// costs an uncontended mutex, no system call.
//
// Thread-safe.
#ifndef SKIFF_STORE_INTERNAL_SOCKET_DEADLINE_H_
#define SKIFF_STORE_INTERNAL_SOCKET_DEADLINE_H_

#include <chrono>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"

namespace skiff::store::internal {

class SocketDeadline {
 public:
  // `clock` tells when a deadline passed; it must outlive the object.
  SocketDeadline(std::chrono::milliseconds timeout, const Clock& clock);
  ~SocketDeadline();
  SocketDeadline(const SocketDeadline&) = delete;
  SocketDeadline& operator=(const SocketDeadline&) = delete;

  // Starts timing a call on `fd` (one at a time); it may block `timeout`.
  void Arm(int fd);
  // Ends the call. True when its deadline passed and the socket was shut.
  bool Disarm();

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  void Run();

  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds period_;
  const Clock& clock_;
  Mutex mu_;
  CondVar cv_;
  int fd_ SKIFF_GUARDED_BY(mu_) = -1;  // -1 = not armed
  Clock::TimePoint deadline_ SKIFF_GUARDED_BY(mu_);
  bool fired_ SKIFF_GUARDED_BY(mu_) = false;
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_SOCKET_DEADLINE_H_
