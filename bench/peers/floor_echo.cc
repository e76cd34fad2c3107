// The floor peer: the least a WebSocket server on this machine can do for
// the echo and latency rows of bench/connections_bench.cc and
// bench/transport_bench.cc (targets ".../floor"), so that skiffd's figures
// read as a distance to what the machine allows as well as to Bun.
//
// One thread, one level-triggered epoll set, no allocation after start: a
// fixed slot per descriptor holds a connection's state, the bytes of a frame
// not yet complete and the replies a full socket could not take. Each read
// is answered by one write carrying every reply to the frames it completed.
//
// It speaks the part of the v1 wire those rows use, the way
// bench/peers/kv_protocol.mjs answers it, without parsing JSON: a request
// must begin `{"id":ID,"op":"OP"` (the member order every bench client
// writes), and each reply is spliced from that prefix and a fixed template:
//   echo    `{"id":ID,"ok":true` and then the request's bytes after the op:
//           for `{"id":ID,"op":"echo","data":D}` the peers' reply
//           `{"id":ID,"ok":true,"data":D}`, byte for byte, for any D the
//           benches send
//   login   {"id":ID,"ok":true} when the request holds "secret":"SECRET",
//           else an unauthorized error; logout and ping {"id":ID,"ok":true}
//   stats   {"id":ID,"ok":true,"store":"none","durability":"none"}, what the
//           suite's harness asks a server it attaches to
//   other   an unauthorized error before login, else bad_request
// A frame that does not begin that way, a fragmented or unmasked frame, one
// larger than kFrameBytes and a reply backlog larger than kPendingBytes close
// the connection: none of them happens in the rows it serves. No TLS, no
// permessage-deflate, no HTTP besides the upgrade.
//
// Usage: floor_echo   (PORT, default 0 = ephemeral; SKIFF_PEER_SECRET, the
// login secret, default empty). Prints
// "floor_echo listening on 127.0.0.1:PORT scheme=ws" first, as the other
// peers do; SIGTERM ends it with status 0.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

constexpr int kMaxFds = 32768;            // descriptors with a slot; higher ones are closed
constexpr size_t kFrameBytes = 2048;      // largest frame (and upgrade request) taken
constexpr size_t kPendingBytes = 4096;    // largest reply backlog of a full socket
constexpr size_t kReadBytes = 64 * 1024;  // one read
// The replies to one read: the largest reply (an error to a minimal
// request) is under eight times its request.
constexpr size_t kWriteBytes = 8 * (kReadBytes + kFrameBytes);

volatile std::sig_atomic_t g_stop = 0;

enum class State : uint8_t { kFree = 0, kHandshake, kOpen, kClosing };

// A connection's state, 8 bytes: its buffers are in arrays of their own
// (Floor::partial_, Floor::pending_), so a page of them is touched only by
// the connections that keep a partial frame or a backlog. Trivial on
// purpose: the slots live in zeroed static storage (kFree is 0).
struct Conn {
  State state;
  bool logged_in;
  uint16_t partial_len;
  uint16_t pending_len;
  uint16_t pending_off;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The value of header `name` (lowercase, with its colon) in an HTTP head,
// trimmed; empty when absent.
std::string_view Header(std::string_view head, std::string_view name) {
  size_t line = head.find("\r\n");
  while (line != std::string_view::npos && line + 2 < head.size()) {
    const size_t start = line + 2;
    const size_t end = head.find("\r\n", start);
    const std::string_view text =
        head.substr(start, (end == std::string_view::npos ? head.size() : end) - start);
    if (text.size() > name.size() &&
        std::equal(name.begin(), name.end(), text.begin(),
                   [](char a, char b) { return a == (b | ((b >= 'A' && b <= 'Z') ? 0x20 : 0)); })) {
      std::string_view value = text.substr(name.size());
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
      return value;
    }
    line = end;
  }
  return {};
}

class Floor {
 public:
  Floor(int listener, std::string_view secret) : listener_(listener) {
    secret_len_ = std::snprintf(secret_, sizeof secret_, "\"secret\":\"%.*s\"",
                                static_cast<int>(secret.size()), secret.data());
  }

  int Run() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listener_;
    if (epoll_ < 0 || epoll_ctl(epoll_, EPOLL_CTL_ADD, listener_, &ev) != 0) {
      std::perror("floor_echo: epoll");
      return 1;
    }
    epoll_event events[256];
    while (g_stop == 0) {
      const int n = epoll_wait(epoll_, events, 256, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::perror("floor_echo: epoll_wait");
        return 1;
      }
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listener_) {
          Accept();
        } else if (events[i].events & EPOLLOUT) {
          OnWritable(fd);
        } else {
          OnReadable(fd);
        }
      }
    }
    return 0;
  }

 private:
  void Accept() {
    for (;;) {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a connection that went away first
      if (fd >= kMaxFds) {
        close(fd);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      Conn& c = conns_[fd];
      c.state = State::kHandshake;
      c.logged_in = false;
      c.partial_len = c.pending_len = c.pending_off = 0;
      Watch(fd, EPOLLIN, EPOLL_CTL_ADD);
    }
  }

  void Watch(int fd, uint32_t events, int op = EPOLL_CTL_MOD) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(epoll_, op, fd, &ev);
  }

  void Close(int fd) {
    close(fd);  // leaves the epoll set with it
    conns_[fd].state = State::kFree;
  }

  void OnReadable(int fd) {
    Conn& c = conns_[fd];
    if (c.state == State::kFree) return;  // closed earlier in this batch
    // A hang-up reported while replies wait: they go first (or fail).
    if (c.pending_len > 0) return OnWritable(fd);
    std::memcpy(in_, partial_[fd], c.partial_len);
    const ssize_t n = recv(fd, in_ + c.partial_len, kReadBytes, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) return Close(fd);
    size_t len = c.partial_len + size_t(n);
    size_t used = 0;
    out_len_ = 0;
    if (c.state == State::kHandshake && !Handshake(c, len, &used)) return Close(fd);
    if (c.state == State::kOpen) {
      size_t frames = 0;
      if (!Frames(c, in_ + used, len - used, &frames)) return Close(fd);
      used += frames;
    }
    const size_t rest = c.state == State::kClosing ? 0 : len - used;
    if (rest > kFrameBytes) return Close(fd);
    std::memmove(partial_[fd], in_ + used, rest);
    c.partial_len = uint16_t(rest);
    Flush(fd, c);
  }

  // Sends the replies of one read in one write; what the socket does not
  // take waits in the slot, and reading stops until it is gone.
  void Flush(int fd, Conn& c) {
    if (out_len_ == 0) return;
    const ssize_t sent = send(fd, out_, out_len_, MSG_NOSIGNAL);
    if (sent < 0 && errno != EAGAIN && errno != EINTR) return Close(fd);
    const size_t done = sent < 0 ? 0 : size_t(sent);
    if (done == out_len_) {
      if (c.state == State::kClosing) Close(fd);
      return;
    }
    if (out_len_ - done > kPendingBytes) return Close(fd);
    std::memcpy(pending_[fd], out_ + done, out_len_ - done);
    c.pending_len = uint16_t(out_len_ - done);
    c.pending_off = 0;
    Watch(fd, EPOLLOUT);
  }

  void OnWritable(int fd) {
    Conn& c = conns_[fd];
    if (c.state == State::kFree) return;
    const ssize_t sent =
        send(fd, pending_[fd] + c.pending_off, c.pending_len - c.pending_off, MSG_NOSIGNAL);
    if (sent < 0 && errno != EAGAIN && errno != EINTR) return Close(fd);
    if (sent > 0) c.pending_off = uint16_t(c.pending_off + sent);
    if (c.pending_off < c.pending_len) return;
    c.pending_len = c.pending_off = 0;
    if (c.state == State::kClosing) return Close(fd);
    Watch(fd, EPOLLIN);
  }

  // The upgrade request at the front of in_: answers 101 (or 400 and
  // closes) once the head is complete. False: close now.
  bool Handshake(Conn& c, size_t len, size_t* used) {
    const std::string_view bytes(reinterpret_cast<const char*>(in_), len);
    const size_t end = bytes.find("\r\n\r\n");
    if (end == std::string_view::npos) return len <= kFrameBytes;
    const std::string_view head = bytes.substr(0, end + 2);
    const std::string_view key = Header(head, "sec-websocket-key:");
    if (!StartsWith(head, "GET ") || key.empty() || key.size() > 64) {
      Append(
          "HTTP/1.1 400 Bad Request\r\nContent-Length: 15\r\nConnection: close\r\n\r\n"
          "WebSocket only\n");
      c.state = State::kClosing;
      *used = len;
      return true;
    }
    char salted[128];
    const int salted_len =
        std::snprintf(salted, sizeof salted, "%.*s258EAFA5-E914-47DA-95CA-C5AB0DC85B11",
                      static_cast<int>(key.size()), key.data());
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(salted), size_t(salted_len), digest);
    unsigned char accept[32];
    EVP_EncodeBlock(accept, digest, SHA_DIGEST_LENGTH);
    Append(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: ");
    Append(reinterpret_cast<const char*>(accept));
    Append("\r\n\r\n");
    c.state = State::kOpen;
    *used = end + 4;
    return true;
  }

  // Answers every complete frame at the front of `p`; *used is what they
  // took. False: close now.
  bool Frames(Conn& c, unsigned char* p, size_t len, size_t* used) {
    size_t off = 0;
    while (c.state == State::kOpen && len - off >= 2) {
      const unsigned char b0 = p[off], b1 = p[off + 1];
      const unsigned opcode = b0 & 0x0f;
      // Whole (FIN), no extension bits, masked as every client frame is.
      if ((b0 & 0xf0) != 0x80 || (b1 & 0x80) == 0) return false;
      uint64_t size = b1 & 0x7f;
      size_t header = 2;
      if (size == 126) {
        if (len - off < 4) break;
        size = (uint64_t(p[off + 2]) << 8) | p[off + 3];
        header = 4;
      } else if (size == 127) {
        return false;  // over 64 KiB: far beyond kFrameBytes
      }
      if (header + 4 + size > kFrameBytes) return false;
      if (len - off < header + 4 + size) break;
      const unsigned char* mask = p + off + header;
      unsigned char* payload = p + off + header + 4;
      for (size_t i = 0; i < size; ++i) payload[i] ^= mask[i & 3];
      const std::string_view text(reinterpret_cast<const char*>(payload), size);
      off += header + 4 + size;
      // The largest reply any frame gets, with its header.
      if (out_len_ + size + 160 > kWriteBytes) return false;
      switch (opcode) {
        case 0x1:
        case 0x2:
          if (!Message(c, text)) return false;
          break;
        case 0x8:  // close: answer with its status code, then close
          AppendFrame(0x88, text.substr(0, std::min<size_t>(size, 2)), {});
          c.state = State::kClosing;
          break;
        case 0x9:
          AppendFrame(0x8a, text, {});
          break;
        case 0xa:
          break;
        default:
          return false;
      }
    }
    *used = off;
    return true;
  }

  // One request; false when it does not begin {"id":ID,"op":"OP".
  bool Message(Conn& c, std::string_view text) {
    constexpr std::string_view kId = "{\"id\":";
    constexpr std::string_view kOp = ",\"op\":\"";
    if (!StartsWith(text, kId)) return false;
    const size_t comma = text.find(',', kId.size());
    if (comma == std::string_view::npos || !StartsWith(text.substr(comma), kOp)) return false;
    const size_t op_start = comma + kOp.size();
    const size_t op_end = text.find('"', op_start);
    if (op_end == std::string_view::npos) return false;
    const std::string_view head = text.substr(0, comma);  // {"id":ID
    const std::string_view op = text.substr(op_start, op_end - op_start);
    if (op == "echo") {
      AppendFrame(0x81, head, ",\"ok\":true", text.substr(op_end + 1));
    } else if (op == "login") {
      c.logged_in = text.find(std::string_view(secret_, size_t(secret_len_))) != text.npos;
      if (c.logged_in) {
        AppendFrame(0x81, head, ",\"ok\":true}");
      } else {
        AppendFrame(0x81, head,
                    ",\"ok\":false,\"error\":{\"code\":\"unauthorized\",\"message\":\"wrong "
                    "user or secret\"}}");
      }
    } else if (op == "stats") {
      AppendFrame(0x81, head, ",\"ok\":true,\"store\":\"none\",\"durability\":\"none\"}");
    } else if (op == "logout" || op == "ping") {
      if (op == "logout") c.logged_in = false;
      AppendFrame(0x81, head, ",\"ok\":true}");
    } else if (!c.logged_in) {
      AppendFrame(0x81, head,
                  ",\"ok\":false,\"error\":{\"code\":\"unauthorized\",\"message\":\"log in "
                  "first\"}}");
    } else {
      AppendFrame(0x81, head,
                  ",\"ok\":false,\"error\":{\"code\":\"bad_request\",\"message\":\"unknown "
                  "op\"}}");
    }
    return true;
  }

  // An unmasked frame whose payload is `a`, `b` and `c` in turn.
  void AppendFrame(unsigned char b0, std::string_view a, std::string_view b,
                   std::string_view c = {}) {
    const size_t size = a.size() + b.size() + c.size();
    out_[out_len_++] = b0;
    if (size < 126) {
      out_[out_len_++] = static_cast<unsigned char>(size);
    } else {
      out_[out_len_++] = 126;
      out_[out_len_++] = static_cast<unsigned char>(size >> 8);
      out_[out_len_++] = static_cast<unsigned char>(size);
    }
    Append(a);
    Append(b);
    Append(c);
  }

  void Append(std::string_view s) {
    std::memcpy(out_ + out_len_, s.data(), s.size());
    out_len_ += s.size();
  }

  const int listener_;
  int epoll_ = -1;
  char secret_[256];
  int secret_len_ = 0;
  size_t out_len_ = 0;
  unsigned char in_[kFrameBytes + kReadBytes];
  unsigned char out_[kWriteBytes];
  Conn conns_[kMaxFds];
  unsigned char partial_[kMaxFds][kFrameBytes];
  unsigned char pending_[kMaxFds][kPendingBytes];
};

}  // namespace

int main() {
  if (std::getenv("SKIFF_PEER_TLS_CERT") != nullptr ||
      std::getenv("SKIFF_PEER_TLS_KEY") != nullptr) {
    std::fprintf(stderr, "floor_echo: serves ws:// only (no TLS)\n");
    return 2;
  }
  const char* port_text = std::getenv("PORT");
  const char* secret = std::getenv("SKIFF_PEER_SECRET");
  const long port = port_text != nullptr ? std::strtol(port_text, nullptr, 10) : 0;
  if (port < 0 || port > 65535 || (secret != nullptr && std::strlen(secret) > 200)) {
    std::fprintf(stderr, "floor_echo: PORT is 0..65535, SKIFF_PEER_SECRET at most 200 bytes\n");
    return 2;
  }
  // Thousands of connections need the hard descriptor limit.
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  struct sigaction term {};
  term.sa_handler = [](int) { g_stop = 1; };
  sigaction(SIGTERM, &term, nullptr);  // no SA_RESTART: epoll_wait returns
  sigaction(SIGINT, &term, nullptr);

  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t addr_len = sizeof addr;
  // The backlog skiffd and the Node peer have (SOMAXCONN).
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 4096) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) {
    std::perror("floor_echo: listen on 127.0.0.1");
    return 1;
  }
  // Static: the slots and buffers are too large for a stack, and are
  // touched page by page as connections use them.
  static Floor floor(listener, secret != nullptr ? secret : "");
  std::printf("floor_echo listening on 127.0.0.1:%u scheme=ws\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  return floor.Run();
}
