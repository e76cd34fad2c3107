// WsPeer: a bare WebSocket client on a blocking socket, for tests that act
// as no well-behaved client would: frames cut anywhere, bad handshakes,
// frames that never end, replies never read. Built on the same frame codec
// as the server (src/ws), in the client role, so what it reads is checked
// the way RFC 6455 asks of a client.
//
// Every wait is bounded (10 s by default) so a broken server fails a test
// instead of hanging it. Not thread-safe: one thread drives a peer.
#ifndef SKIFF_TEST_SERVER_WS_PEER_H_
#define SKIFF_TEST_SERVER_WS_PEER_H_

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ws/frame.h"
#include "ws/handshake.h"

namespace skiff::testing {

struct Received {
  ws::Opcode opcode = ws::Opcode::kText;
  std::string payload;
  uint16_t close_code = 0;
};

class WsPeer {
 public:
  using Millis = std::chrono::milliseconds;
  static constexpr Millis kWait{10000};

  WsPeer() = default;
  ~WsPeer() {
    if (fd_ >= 0) ::close(fd_);
  }
  WsPeer(const WsPeer&) = delete;
  WsPeer& operator=(const WsPeer&) = delete;

  // Shrinks the receive buffer of the next Connect (a client that does not
  // read fills it sooner).
  void set_receive_buffer(int bytes) { receive_buffer_ = bytes; }

  // A TCP connection to 127.0.0.1:port.
  bool Connect(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    if (receive_buffer_ > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_, sizeof receive_buffer_);
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }

  // Connects and completes the opening handshake; false (with the server's
  // answer in *why) when it is refused. `then` is sent in the same write as
  // the request (frames a client sends without waiting for the 101).
  bool Open(uint16_t port, std::string* why = nullptr, std::string_view then = {}) {
    if (!Connect(port)) return false;
    key_ = ws::NewClientKey();
    std::string request = ws::ClientRequest("127.0.0.1:" + std::to_string(port), key_);
    request += then;
    if (!SendRaw(request)) return false;
    std::string reason;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    for (;;) {
      size_t head = 0;
      switch (ws::ParseUpgradeResponse(in_, key_, &head, &reason)) {
        case ws::ResponseResult::kAccepted:
          in_.erase(0, head);
          return true;
        case ws::ResponseResult::kRefused:
          if (why) *why = reason;
          return false;
        case ws::ResponseResult::kNeedMore:
          break;
      }
      if (!ReadSome(deadline)) {
        if (why) *why = "connection ended during the handshake: " + in_;
        return false;
      }
    }
  }

  // Sends no more (a half-close: FIN after what was sent); reading goes on.
  void EndSending() { ::shutdown(fd_, SHUT_WR); }

  // Writes all of `bytes` (blocking); false when the connection failed.
  bool SendRaw(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Writes what the socket takes without blocking: the bytes written (0
  // when it is full), or -1 once the connection failed.
  ssize_t SendSome(std::string_view bytes) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
  }

  // One masked frame; `first_byte` carries FIN, RSV and the opcode.
  static std::string Frame(uint8_t first_byte, std::string_view payload) {
    std::string out;
    ws::AppendMaskedFrame(out, ws::Opcode::kText, payload, 0x9d3b7a21);
    out[0] = static_cast<char>(first_byte);
    return out;
  }
  bool SendText(std::string_view payload) { return SendRaw(Frame(0x81, payload)); }

  // The next message or control frame from the server; nullopt when the
  // connection ended or nothing came within `wait`. A framing error by the
  // server fails the test that reads it (it comes back as close 1002).
  std::optional<Received> Next(Millis wait = kWait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      std::optional<Received> got;
      ws::FrameReader::Step step = reader_.Read(in_.data(), in_.size(), [&](const ws::Message& m) {
        got = Received{m.opcode, std::string(m.payload), m.close_code};
        return false;
      });
      in_.erase(0, step.consumed);
      if (reader_.failed()) return Received{ws::Opcode::kClose, reader_.error_reason(), 1002};
      if (got) return got;
      if (!ReadSome(deadline)) return std::nullopt;
    }
  }

  // The next text message.
  std::optional<std::string> NextText(Millis wait = kWait) {
    for (;;) {
      std::optional<Received> r = Next(wait);
      if (!r) return std::nullopt;
      if (r->opcode == ws::Opcode::kText) return r->payload;
      if (r->opcode == ws::Opcode::kClose) return std::nullopt;
    }
  }

  // Reads until the server closes the TCP connection; false if it does not
  // within `wait`. Everything read on the way is kept in raw().
  bool WaitEnd(Millis wait = kWait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (ReadSome(deadline)) {
    }
    return ended_;
  }

  // Bytes received and not yet read as frames (a plain HTTP answer, say).
  const std::string& raw() const { return in_; }
  bool ended() const { return ended_; }
  int fd() const { return fd_; }

 private:
  // Appends what arrives before `deadline`; false at the end of the stream
  // (ended_ then) or on timeout.
  bool ReadSome(std::chrono::steady_clock::time_point deadline) {
    if (ended_) return false;
    const auto left =
        std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      ended_ = true;
      return false;
    }
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  int receive_buffer_ = 0;
  std::string key_;
  std::string in_;
  bool ended_ = false;
  ws::FrameReader reader_{ws::Role::kClient, 64u << 20};
};

}  // namespace skiff::testing

#endif  // SKIFF_TEST_SERVER_WS_PEER_H_
