#include "store/internal/socket_deadline.h"

#include <algorithm>

#include <sys/socket.h>

namespace skiff::store::internal {

SocketDeadline::SocketDeadline(std::chrono::milliseconds timeout, const Clock& clock)
    : timeout_(timeout),
      // A tenth of the deadline, so a call ends within 10 % of it.
      period_(
          std::clamp(timeout / 10, std::chrono::milliseconds(5), std::chrono::milliseconds(200))),
      clock_(clock) {
  thread_ = std::thread([this] { Run(); });
}

SocketDeadline::~SocketDeadline() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.Signal();
  thread_.join();
}

void SocketDeadline::Arm(int fd) {
  MutexLock lock(&mu_);
  fd_ = fd;
  fired_ = false;
  deadline_ = clock_.Now() + timeout_;
}

bool SocketDeadline::Disarm() {
  MutexLock lock(&mu_);
  fd_ = -1;
  return fired_;
}

void SocketDeadline::Run() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    cv_.WaitFor(mu_, period_);
    if (fd_ >= 0 && !fired_ && clock_.Now() >= deadline_) {
      // Under the lock: Disarm cannot return, and the caller cannot close
      // the descriptor, while we shut it.
      shutdown(fd_, SHUT_RDWR);
      fired_ = true;
    }
  }
}

}  // namespace skiff::store::internal
