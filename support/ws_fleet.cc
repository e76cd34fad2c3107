#include "support/ws_fleet.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/frame_input.h"

#include "ws/handshake.h"

namespace skiff::bench {
namespace {

constexpr size_t kReadBufferBytes = 64 * 1024;
constexpr size_t kMaxMessageBytes = 64u << 20;

// Why the last OpenSSL call on `ssl` failed (`code` from SSL_get_error),
// with the certificate check's verdict when that is what failed.
std::string TlsError(SSL* ssl, int code) {
  if (code == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
    return errno != 0 ? std::strerror(errno) : "the server closed the connection";
  }
  std::string why = "TLS error";
  if (const unsigned long e = ERR_peek_last_error(); e != 0) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    why = text;
  }
  ERR_clear_error();
  if (const long verify = SSL_get_verify_result(ssl); verify != X509_V_OK) {
    why += std::string(" (certificate: ") + X509_verify_cert_error_string(verify) + ")";
  }
  return why;
}

}  // namespace

struct Fleet::Conn {
  // kTlsHandshaking comes between kConnecting and kHandshaking (the
  // WebSocket upgrade) on a TLS fleet only.
  enum class State { kConnecting, kTlsHandshaking, kHandshaking, kOpen, kClosed };
  int fd = -1;
  State state = State::kConnecting;
  SSL* ssl = nullptr;  // null on a plain connection
  std::string key;
  std::string head;  // the handshake's answer so far
  std::string out;   // bytes not yet taken by the socket
  bool watching_write = false;
  FrameInput input{kMaxMessageBytes};
};

Fleet::Fleet(OnText on_text, OnWake on_wake)
    : on_text_(std::move(on_text)),
      on_wake_(std::move(on_wake)),
      epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      read_buffer_(new char[kReadBufferBytes]) {}

Fleet::~Fleet() {
  for (auto& c : conns_) {
    SSL_free(c->ssl);
    if (c->fd >= 0) ::close(c->fd);
  }
  SSL_CTX_free(tls_ctx_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

Status Fleet::UseTls(const FleetTls& tls) {
  if (tls.server_name.empty()) return BadRequest("a TLS fleet needs a server name to verify");
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Internal("SSL_CTX_new failed");
  if (SSL_CTX_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) != 1) {
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return BadRequest("cannot read CA certificates from '" + tls.ca_file + "'");
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // Writes go from the connection's out string, which may grow (and move)
  // between a write that would block and its retry. Buffers are released
  // while idle so that 10,000 client sessions do not hold 330 MB of
  // record buffers in the process the servers share the machine with.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  // OpenSSL's socket BIO writes with write(2), not send(MSG_NOSIGNAL): a
  // server resetting a connection would end this process with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  SSL_CTX_free(tls_ctx_);
  tls_ctx_ = ctx;
  tls_name_ = tls.server_name;
  in6_addr any{};
  tls_name_is_ip_ = ::inet_pton(AF_INET, tls_name_.c_str(), &any) == 1 ||
                    ::inet_pton(AF_INET6, tls_name_.c_str(), &any) == 1;
  return Status::Ok();
}

FleetOpenReport Fleet::Open(uint16_t port, size_t n, std::chrono::milliseconds timeout,
                            size_t max_pending) {
  FleetOpenReport report;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  const size_t first = conns_.size();
  first_error_.clear();
  max_pending = std::max<size_t>(1, max_pending);
  for (size_t k = 0; k < n; ++k) {
    if (pending_ >= max_pending &&
        !RunUntil([&] { return pending_ < max_pending; }, deadline - Clock::now())) {
      break;
    }
    StartOne(port);
  }
  RunUntil([&] { return pending_ == 0; }, deadline - Clock::now());
  // Connections never started keep the numbering: they are there, closed.
  while (conns_.size() < first + n) {
    conns_.push_back(std::make_unique<Conn>());
    conns_.back()->state = Conn::State::kClosed;
  }
  for (size_t i = first; i < conns_.size(); ++i) {
    if (conns_[i]->state == Conn::State::kOpen) ++report.opened;
  }
  report.failed = n - report.opened;
  report.first_error = first_error_;
  if (report.failed > 0 && report.first_error.empty()) report.first_error = "timed out";
  report.elapsed = Clock::now() - start;
  return report;
}

void Fleet::StartOne(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const size_t i = conns_.size();
  conns_.push_back(std::make_unique<Conn>());
  Conn& conn = *conns_.back();
  conn.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (conn.fd < 0) {
    if (first_error_.empty()) first_error_ = std::string("socket: ") + std::strerror(errno);
    conn.state = Conn::State::kClosed;
    return;
  }
  int one = 1;
  ::setsockopt(conn.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  conn.key = ws::NewClientKey();
  conn.out = ws::ClientRequest("127.0.0.1:" + std::to_string(port), conn.key);
  const int rc = ::connect(conn.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno != EINPROGRESS) {
    if (first_error_.empty()) first_error_ = std::string("connect: ") + std::strerror(errno);
    ::close(conn.fd);
    conn.fd = -1;
    conn.state = Conn::State::kClosed;
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.u64 = i;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, conn.fd, &ev);
  conn.watching_write = true;
  ++pending_;
}

bool Fleet::is_open(size_t i) const {
  return i < conns_.size() && conns_[i]->state == Conn::State::kOpen;
}

bool Fleet::Send(size_t i, std::string_view text) {
  Conn& c = *conns_[i];
  if (c.state != Conn::State::kOpen) return false;
  const bool idle = c.out.empty();
  ws::AppendMaskedFrame(c.out, ws::Opcode::kText, text, keys_.Next());
  if (idle) OnWritable(i);
  return c.state == Conn::State::kOpen;
}

void Fleet::WakeAt(size_t i, Clock::time_point when) { wakes_.emplace(when, i); }

void Fleet::FireDueWakes(Clock::time_point now) {
  while (!wakes_.empty() && wakes_.top().first <= now) {
    const size_t i = wakes_.top().second;
    wakes_.pop();
    if (on_wake_) on_wake_(i);
  }
}

bool Fleet::RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  epoll_event events[1024];
  for (;;) {
    Clock::time_point now = Clock::now();
    FireDueWakes(now);
    if (done()) return true;
    if (now >= deadline) return false;
    Clock::time_point until = deadline;
    if (!wakes_.empty() && wakes_.top().first < until) until = wakes_.top().first;
    const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(until - now);
    timespec ts{static_cast<time_t>(wait.count() / 1'000'000'000),
                static_cast<long>(wait.count() % 1'000'000'000)};
    const int n = ::epoll_pwait2(epoll_fd_, events, 1024, &ts, nullptr);
    for (int k = 0; k < n; ++k) Handle(static_cast<size_t>(events[k].data.u64), events[k].events);
  }
}

void Fleet::Handle(size_t i, uint32_t events) {
  Conn& c = *conns_[i];
  if (c.state == Conn::State::kClosed) return;
  if (c.state == Conn::State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return Finish(i, true, std::string("connect: ") + std::strerror(err));
    if (!(events & (EPOLLOUT | EPOLLIN))) return;
    if (tls_ctx_ != nullptr) return StartTls(i);
    c.state = Conn::State::kHandshaking;
  }
  if (c.state == Conn::State::kTlsHandshaking) return ContinueTls(i);
  if (events & (EPOLLOUT | EPOLLERR)) OnWritable(i);
  // A TLS read may wait for writability too (a record to send first).
  if (c.state != Conn::State::kClosed &&
      ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || c.ssl != nullptr)) {
    OnReadable(i);
  }
}

void Fleet::StartTls(size_t i) {
  Conn& c = *conns_[i];
  c.ssl = SSL_new(tls_ctx_);
  bool ready = c.ssl != nullptr && SSL_set_fd(c.ssl, c.fd) == 1;
  if (ready && tls_name_is_ip_) {
    ready = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c.ssl), tls_name_.c_str()) == 1;
  } else if (ready) {
    ready = SSL_set1_host(c.ssl, tls_name_.c_str()) == 1 &&
            SSL_set_tlsext_host_name(c.ssl, tls_name_.c_str()) == 1;
  }
  if (!ready) {
    ERR_clear_error();
    return Finish(i, true, "cannot set up a TLS session");
  }
  SSL_set_connect_state(c.ssl);
  c.state = Conn::State::kTlsHandshaking;
  ContinueTls(i);
}

void Fleet::ContinueTls(size_t i) {
  Conn& c = *conns_[i];
  ERR_clear_error();
  errno = 0;
  const int r = SSL_do_handshake(c.ssl);
  if (r == 1) {
    c.state = Conn::State::kHandshaking;
    return OnWritable(i);  // the upgrade request, waiting in out
  }
  const int code = SSL_get_error(c.ssl, r);
  if (code == SSL_ERROR_WANT_READ) return Watch(i, false);
  if (code == SSL_ERROR_WANT_WRITE) return Watch(i, true);
  Finish(i, true, "TLS handshake: " + TlsError(c.ssl, code));
}

void Fleet::OnWritable(size_t i) {
  Conn& c = *conns_[i];
  if (c.state == Conn::State::kConnecting || c.state == Conn::State::kTlsHandshaking ||
      c.state == Conn::State::kClosed) {
    return;
  }
  while (!c.out.empty()) {
    if (c.ssl != nullptr) {
      size_t n = 0;
      ERR_clear_error();
      errno = 0;
      if (SSL_write_ex(c.ssl, c.out.data(), c.out.size(), &n) == 1) {
        c.out.erase(0, n);
        continue;
      }
      const int code = SSL_get_error(c.ssl, 0);
      if (code == SSL_ERROR_WANT_WRITE || code == SSL_ERROR_WANT_READ) break;
      return Finish(i, true, "TLS write: " + TlsError(c.ssl, code));
    }
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return Finish(i, true, std::string("send: ") + std::strerror(errno));
  }
  Watch(i, !c.out.empty());
}

void Fleet::OnReadable(size_t i) {
  Conn& c = *conns_[i];
  for (;;) {
    char* const data = read_buffer_.get();
    ssize_t n = 0;
    if (c.ssl != nullptr) {
      size_t got = 0;
      ERR_clear_error();
      errno = 0;
      if (SSL_read_ex(c.ssl, data, kReadBufferBytes, &got) != 1) {
        const int code = SSL_get_error(c.ssl, 0);
        if (code == SSL_ERROR_WANT_READ) return;
        if (code == SSL_ERROR_WANT_WRITE) return Watch(i, true);
        if (code == SSL_ERROR_ZERO_RETURN) {
          return Finish(i, !closing_, "the server closed the connection");
        }
        return Finish(i, !closing_, "TLS read: " + TlsError(c.ssl, code));
      }
      n = static_cast<ssize_t>(got);
    } else {
      n = ::recv(c.fd, data, kReadBufferBytes, 0);
      if (n == 0) return Finish(i, !closing_, "the server closed the connection");
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        return Finish(i, !closing_, std::string("recv: ") + std::strerror(errno));
      }
    }
    size_t frames_at = 0;  // where frames start in data
    if (c.state == Conn::State::kHandshaking) {
      c.head.append(data, static_cast<size_t>(n));
      size_t head = 0;
      std::string why;
      switch (ws::ParseUpgradeResponse(c.head, c.key, &head, &why)) {
        case ws::ResponseResult::kNeedMore:
          continue;
        case ws::ResponseResult::kRefused:
          return Finish(i, true, "handshake refused: " + why);
        case ws::ResponseResult::kAccepted:
          // Frames may follow the head in this same read.
          frames_at = static_cast<size_t>(n) - (c.head.size() - head);
          std::string().swap(c.head);
          std::string().swap(c.key);
          c.state = Conn::State::kOpen;
          ++open_;
          --pending_;
          break;
      }
    }
    bool closed = false;
    const bool valid = c.input.Feed(data + frames_at, static_cast<size_t>(n) - frames_at,
                                    [&](const ws::Message& m) {
                                      if (m.opcode == ws::Opcode::kText) {
                                        on_text_(i, m.payload);
                                      } else if (m.opcode == ws::Opcode::kClose) {
                                        closed = true;
                                        return false;
                                      }
                                      return true;
                                    });
    if (!valid) {
      ++protocol_errors_;
      return Finish(i, true, "bad server frame: " + c.input.error());
    }
    if (closed) return Finish(i, !closing_, "the server sent a close frame");
    // A TLS read returns one record at most: go on while OpenSSL holds more
    // (the socket's own bytes wake the loop again).
    if (c.ssl != nullptr ? SSL_has_pending(c.ssl) != 1
                         : static_cast<size_t>(n) < kReadBufferBytes) {
      return;
    }
  }
}

void Fleet::Watch(size_t i, bool want_write) {
  Conn& c = *conns_[i];
  if (c.watching_write == want_write) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (want_write ? uint32_t{EPOLLOUT} : uint32_t{0});
  ev.data.u64 = i;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.watching_write = want_write;
}

void Fleet::Finish(size_t i, bool lost, std::string why) {
  Conn& c = *conns_[i];
  if (c.state == Conn::State::kClosed) return;
  if (c.state == Conn::State::kOpen) {
    --open_;
  } else {
    --pending_;
    if (first_error_.empty()) first_error_ = why;
  }
  if (lost) ++lost_;
  c.state = Conn::State::kClosed;
  SSL_free(c.ssl);
  c.ssl = nullptr;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  c.fd = -1;
  c.input.Clear();
  std::string().swap(c.out);
}

void Fleet::CloseAll(std::chrono::milliseconds timeout) {
  closing_ = true;
  const std::string close_payload = ws::ClosePayload(ws::kCloseNormal, "");
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = *conns_[i];
    if (c.state != Conn::State::kOpen) continue;
    const bool idle = c.out.empty();
    ws::AppendMaskedFrame(c.out, ws::Opcode::kClose, close_payload, keys_.Next());
    if (idle) OnWritable(i);
  }
  RunUntil([&] { return open_ == 0; }, timeout);
  for (size_t i = 0; i < conns_.size(); ++i) {
    if (conns_[i]->state == Conn::State::kOpen) Finish(i, false, "closed");
  }
  closing_ = false;
}

uint64_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

}  // namespace skiff::bench
