#include "support/fanout_tcp_fleet.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skiff::bench {
namespace {

constexpr size_t kReadBufferBytes = 64 * 1024;

}  // namespace

struct TcpFleet::Conn {
  enum class State { kConnecting, kOpen, kClosed };
  int fd = -1;
  State state = State::kConnecting;
  std::string in;   // received, not consumed yet
  std::string out;  // not yet taken by the socket
  bool watching_write = false;
};

TcpFleet::TcpFleet(OnBytes on_bytes)
    : on_bytes_(std::move(on_bytes)),
      epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      read_buffer_(new char[kReadBufferBytes]) {}

TcpFleet::~TcpFleet() {
  CloseAll();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

size_t TcpFleet::Open(uint16_t port, size_t n, std::chrono::milliseconds timeout,
                      size_t max_pending) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const size_t first = conns_.size();
  max_pending = std::max<size_t>(1, max_pending);
  for (size_t k = 0; k < n; ++k) {
    if (pending_ >= max_pending && !RunUntil([&] { return pending_ < max_pending; },
                                             deadline - std::chrono::steady_clock::now())) {
      break;
    }
    StartOne(port);
  }
  RunUntil([&] { return pending_ == 0; }, deadline - std::chrono::steady_clock::now());
  while (conns_.size() < first + n) {
    conns_.push_back(std::make_unique<Conn>());
    conns_.back()->state = Conn::State::kClosed;
    if (first_error_.empty()) first_error_ = "timed out connecting";
  }
  size_t opened = 0;
  for (size_t i = first; i < conns_.size(); ++i) {
    if (conns_[i]->state == Conn::State::kOpen) ++opened;
  }
  return opened;
}

void TcpFleet::StartOne(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const size_t i = conns_.size();
  conns_.push_back(std::make_unique<Conn>());
  Conn& c = *conns_.back();
  c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) {
    if (first_error_.empty()) first_error_ = std::string("socket: ") + std::strerror(errno);
    c.state = Conn::State::kClosed;
    return;
  }
  int one = 1;
  ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 &&
      errno != EINPROGRESS) {
    if (first_error_.empty()) first_error_ = std::string("connect: ") + std::strerror(errno);
    ::close(c.fd);
    c.fd = -1;
    c.state = Conn::State::kClosed;
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.u64 = i;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev);
  c.watching_write = true;
  ++pending_;
}

bool TcpFleet::is_open(size_t i) const {
  return i < conns_.size() && conns_[i]->state == Conn::State::kOpen;
}

bool TcpFleet::Send(size_t i, std::string_view bytes) {
  Conn& c = *conns_[i];
  if (c.state == Conn::State::kClosed) return false;
  const bool idle = c.out.empty();
  c.out.append(bytes);
  if (idle && c.state == Conn::State::kOpen) OnWritable(i);
  return c.state != Conn::State::kClosed;
}

bool TcpFleet::RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  epoll_event events[1024];
  for (;;) {
    if (done()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
    timespec ts{static_cast<time_t>(wait.count() / 1'000'000'000),
                static_cast<long>(wait.count() % 1'000'000'000)};
    const int n = ::epoll_pwait2(epoll_fd_, events, 1024, &ts, nullptr);
    for (int k = 0; k < n; ++k) Handle(static_cast<size_t>(events[k].data.u64), events[k].events);
  }
}

void TcpFleet::Handle(size_t i, uint32_t events) {
  Conn& c = *conns_[i];
  if (c.state == Conn::State::kClosed) return;
  if (c.state == Conn::State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return Finish(i, true, std::string("connect: ") + std::strerror(err));
    if (!(events & (EPOLLOUT | EPOLLIN))) return;
    c.state = Conn::State::kOpen;
    --pending_;
    ++open_;
  }
  if (events & (EPOLLOUT | EPOLLERR)) OnWritable(i);
  if (c.state != Conn::State::kClosed && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
    OnReadable(i);
  }
}

void TcpFleet::OnWritable(size_t i) {
  Conn& c = *conns_[i];
  if (c.state != Conn::State::kOpen) return;
  size_t sent = 0;
  while (sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + sent, c.out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return Finish(i, true, std::string("send: ") + std::strerror(errno));
  }
  c.out.erase(0, sent);
  WatchWrite(i, !c.out.empty());
}

void TcpFleet::OnReadable(size_t i) {
  Conn& c = *conns_[i];
  for (;;) {
    const ssize_t n = ::recv(c.fd, read_buffer_.get(), kReadBufferBytes, 0);
    if (n == 0) return Finish(i, true, "the server closed the connection");
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return Finish(i, true, std::string("recv: ") + std::strerror(errno));
    }
    c.in.append(read_buffer_.get(), static_cast<size_t>(n));
    const size_t used = on_bytes_(i, c.in);
    if (c.state == Conn::State::kClosed) return;
    c.in.erase(0, used);
    if (static_cast<size_t>(n) < kReadBufferBytes) return;
  }
}

void TcpFleet::WatchWrite(size_t i, bool want_write) {
  Conn& c = *conns_[i];
  if (c.watching_write == want_write) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (want_write ? uint32_t{EPOLLOUT} : uint32_t{0});
  ev.data.u64 = i;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.watching_write = want_write;
}

void TcpFleet::Finish(size_t i, bool lost, const std::string& why) {
  Conn& c = *conns_[i];
  if (c.state == Conn::State::kClosed) return;
  if (c.state == Conn::State::kOpen) {
    --open_;
  } else {
    --pending_;
  }
  if (lost) {
    ++lost_;
    if (first_error_.empty()) first_error_ = why;
  }
  c.state = Conn::State::kClosed;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  c.fd = -1;
  std::string().swap(c.in);
  std::string().swap(c.out);
}

void TcpFleet::CloseAll() {
  for (size_t i = 0; i < conns_.size(); ++i) Finish(i, false, "closed");
}

}  // namespace skiff::bench
