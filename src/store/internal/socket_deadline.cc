#include "store/internal/socket_deadline.h"

#include <algorithm>

#include <sys/socket.h>

namespace skiff::store::internal {

SocketDeadline::SocketDeadline(std::chrono::milliseconds timeout)
    : timeout_(timeout),
      // A tenth of the deadline, so a call ends within 10 % of it.
      period_(
          std::clamp(timeout / 10, std::chrono::milliseconds(5), std::chrono::milliseconds(200))) {
  thread_ = std::thread([this] { Run(); });
}

SocketDeadline::~SocketDeadline() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void SocketDeadline::Arm(int fd) {
  std::lock_guard lock(mu_);
  fd_ = fd;
  fired_ = false;
  deadline_ = std::chrono::steady_clock::now() + timeout_;
}

bool SocketDeadline::Disarm() {
  std::lock_guard lock(mu_);
  fd_ = -1;
  return fired_;
}

void SocketDeadline::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, period_);
    if (fd_ >= 0 && !fired_ && std::chrono::steady_clock::now() >= deadline_) {
      // Under the lock: Disarm cannot return, and the caller cannot close
      // the descriptor, while we shut it.
      shutdown(fd_, SHUT_RDWR);
      fired_ = true;
    }
  }
}

}  // namespace skiff::store::internal
