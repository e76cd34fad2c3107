#include "support/hostile_load.h"

#include <cerrno>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/ws_fleet.h"

#include "ws/frame.h"
#include "ws/handshake.h"

namespace skiff::bench {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kTick{20};
// kNeverReads: what each connection offers; its receive buffer is made
// small so the server's replies back up at once.
constexpr size_t kEchoBytes = 20 * 1024;
constexpr int kNeverReadsReceiveBuffer = 4096;
// kSlowFrames: the frame each connection announces, and what it adds to it
// every 100 ms (a multiple of 4, so the mask lines up chunk after chunk).
constexpr uint64_t kSlowFrameBytes = uint64_t{8} << 20;
constexpr size_t kSlowChunkBytes = 4096;
constexpr milliseconds kSlowChunkEvery{100};
constexpr uint8_t kMaskKey[4] = {0x5a, 0x3c, 0x96, 0x0f};
// kIdleConnections: connections connecting at once while the load is set
// up, below any server's listen backlog, so setting it up drops no SYN.
constexpr size_t kIdleOpenAtOnce = 256;

// A blocking connection to 127.0.0.1:port, or -1.
int Connect(uint16_t port, int receive_buffer) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (receive_buffer > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends the upgrade request on blocking `fd` and reads the answer (up to
// 10 s); true when the server accepted it.
bool Handshake(int fd, uint16_t port) {
  const std::string key = ws::NewClientKey();
  const std::string request = ws::ClientRequest("127.0.0.1:" + std::to_string(port), key);
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return false;
  }
  std::string head;
  char buf[1024];
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    // One byte at a time past the head would be slow; the server sends
    // nothing after its 101 until asked, so whole reads are safe.
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    head.append(buf, static_cast<size_t>(n));
    size_t head_bytes = 0;
    std::string why;
    switch (ws::ParseUpgradeResponse(head, key, &head_bytes, &why)) {
      case ws::ResponseResult::kAccepted:
        return true;
      case ws::ResponseResult::kRefused:
        return false;
      case ws::ResponseResult::kNeedMore:
        break;
    }
  }
  return false;
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

std::string_view HostileName(HostileKind kind) {
  switch (kind) {
    case HostileKind::kNeverReads:
      return "never-reads";
    case HostileKind::kSlowFrames:
      return "slow-frames";
    case HostileKind::kUnfinishedHandshakes:
      return "unfinished-handshakes";
    case HostileKind::kIdleConnections:
      return "idle-connections";
  }
  return "?";
}

// The raw-socket kinds: one poll loop over every connection.
class HostileLoad::Runner {
 public:
  Runner(HostileKind kind, uint16_t port, size_t n) : kind_(kind), port_(port), conns_(n) {
    for (int i = 0; i < 64; ++i) {
      ws::AppendMaskedFrame(
          echoes_, ws::Opcode::kText,
          R"({"id":1,"op":"echo","data":")" + std::string(kEchoBytes, 'e') + R"("})", 0x11223344);
    }
    chunk_.assign(kSlowChunkBytes, 'x');
    ws::Mask(chunk_.data(), chunk_.size(), kMaskKey);
  }
  ~Runner() {
    for (Conn& c : conns_) Close(c);
  }

  // Opens every connection; false when one could not be opened.
  bool OpenAll(std::string* why) {
    for (Conn& c : conns_) {
      if (!Open(c)) {
        *why = "could not open a " + std::string(HostileName(kind_)) + " connection to port " +
               std::to_string(port_);
        return false;
      }
    }
    return true;
  }

  // One round: sends what each kind sends, notices ends and reopens.
  void Step() {
    const auto now = Clock::now();
    const bool chunk_due = now >= next_chunk_;
    if (chunk_due) next_chunk_ = now + kSlowChunkEvery;
    std::vector<pollfd> polls(conns_.size());
    for (size_t i = 0; i < conns_.size(); ++i) {
      short events = POLLRDHUP;
      if (kind_ == HostileKind::kNeverReads) events |= POLLOUT;
      if (kind_ != HostileKind::kNeverReads) events |= POLLIN;
      polls[i] = {conns_[i].fd, events, 0};
    }
    ::poll(polls.data(), polls.size(), static_cast<int>(kTick.count()));
    for (size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = conns_[i];
      const short ev = polls[i].revents;
      bool ended = (ev & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) != 0;
      if (!ended && (ev & POLLIN)) ended = !Drain(c);
      if (!ended && kind_ == HostileKind::kNeverReads && (ev & POLLOUT)) ended = !Flood(c);
      if (!ended && kind_ == HostileKind::kSlowFrames && chunk_due) ended = !Trickle(c);
      if (ended) {
        Close(c);
        ++reopened_;
        if (in_place_) ++ended_since_in_place_;
        Open(c);  // tried again next round when it fails now
      }
    }
  }

  // From now on a connection counts as held until the server ends it.
  void MarkInPlace() {
    in_place_ = true;
    for (Conn& c : conns_) c.held = c.fd >= 0;
  }

  // Every connection is open, and for kNeverReads the server has stopped
  // taking its bytes at least once.
  bool InPlace() const {
    for (const Conn& c : conns_) {
      if (c.fd < 0) return false;
      if (kind_ == HostileKind::kNeverReads && !c.blocked) return false;
    }
    return true;
  }

  HostileCounters Counters() const {
    HostileCounters out;
    out.bytes_sent = bytes_sent_;
    out.reopened = reopened_;
    out.ended_since_in_place = ended_since_in_place_;
    for (const Conn& c : conns_) {
      if (c.fd < 0) continue;
      ++out.open;
      if (c.held) ++out.held;
    }
    return out;
  }

 private:
  struct Conn {
    int fd = -1;
    size_t at = 0;         // kNeverReads: where in echoes_ the next byte is
    uint64_t payload = 0;  // kSlowFrames: payload bytes of the frame sent
    bool blocked = false;  // kNeverReads: the server stopped taking bytes
    bool held = false;     // open since the load was first in place
  };

  bool Open(Conn& c) {
    const int receive_buffer = kind_ == HostileKind::kNeverReads ? kNeverReadsReceiveBuffer : 0;
    c = Conn{};
    c.fd = Connect(port_, receive_buffer);
    if (c.fd < 0) return false;
    if (kind_ == HostileKind::kUnfinishedHandshakes) {
      const std::string half = "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                               "\r\nUpgrade: websocket\r\n";
      if (!SendAll(c, half)) return false;
    } else if (!Handshake(c.fd, port_)) {
      Close(c);
      return false;
    }
    if (kind_ == HostileKind::kSlowFrames) {
      std::string header;
      ws::AppendHeader(header, ws::Opcode::kText, kSlowFrameBytes, kMaskKey);
      if (!SendAll(c, header)) return false;
    }
    SetNonBlocking(c.fd);
    return true;
  }

  // Writes `bytes` on the still blocking socket.
  bool SendAll(Conn& c, const std::string& bytes) {
    if (::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(bytes.size())) {
      Close(c);
      return false;
    }
    bytes_sent_ += bytes.size();
    return true;
  }

  // Reads and drops what the server sent; false once it ended the
  // connection.
  static bool Drain(Conn& c) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }

  // Sends echo requests until the socket takes no more.
  bool Flood(Conn& c) {
    for (int round = 0; round < 64; ++round) {
      const ssize_t n = ::send(c.fd, echoes_.data() + c.at, echoes_.size() - c.at, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
        c.blocked = true;
        return true;
      }
      bytes_sent_ += static_cast<uint64_t>(n);
      c.at = (c.at + static_cast<size_t>(n)) % echoes_.size();
    }
    return true;
  }

  // Adds one chunk to the unfinished frame, short of its end.
  bool Trickle(Conn& c) {
    const uint64_t room = kSlowFrameBytes - kSlowChunkBytes - c.payload;
    if (room < kSlowChunkBytes) return true;  // never finish the frame
    const ssize_t n = ::send(c.fd, chunk_.data(), chunk_.size(), MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    // A short send leaves the mask misaligned for the rest; it only happens
    // once the server stopped reading, and the frame never completes anyway.
    bytes_sent_ += static_cast<uint64_t>(n);
    c.payload += static_cast<uint64_t>(n);
    return true;
  }

  static void Close(Conn& c) {
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }

  const HostileKind kind_;
  const uint16_t port_;
  std::vector<Conn> conns_;
  std::string echoes_;
  std::string chunk_;
  Clock::time_point next_chunk_{};
  uint64_t bytes_sent_ = 0;
  uint64_t reopened_ = 0;
  bool in_place_ = false;
  uint64_t ended_since_in_place_ = 0;
};

HostileLoad::HostileLoad(HostileKind kind, uint16_t port, size_t connections)
    : kind_(kind), port_(port), connections_(connections) {}

HostileLoad::~HostileLoad() { Stop(); }

Status HostileLoad::Start(milliseconds timeout) {
  thread_ = std::thread([this] { Run(); });
  MutexLock lock(&mu_);
  const auto deadline = Clock::now() + timeout;
  while (!in_place_ && error_.empty()) {
    if (!in_place_cv_.WaitUntil(mu_, deadline)) break;
  }
  if (in_place_) return Status::Ok();
  std::string why = error_.empty() ? std::string(HostileName(kind_)) + ": not in place after " +
                                         std::to_string(timeout.count()) + " ms"
                                   : error_;
  lock.Unlock();
  Stop();
  return Unavailable(why);
}

void HostileLoad::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

HostileCounters HostileLoad::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

void HostileLoad::Run() {
  auto fail = [this](std::string why) {
    MutexLock lock(&mu_);
    error_ = std::move(why);
    in_place_cv_.SignalAll();
  };
  auto publish = [this](bool in_place, const HostileCounters& counters) {
    MutexLock lock(&mu_);
    counters_ = counters;
    if (in_place && !in_place_) {
      in_place_ = true;
      in_place_cv_.SignalAll();
    }
  };
  if (kind_ == HostileKind::kIdleConnections) {
    // Opened by one epoll client; they then say nothing. The client does
    // not open again what the server ends.
    Fleet fleet([](size_t, std::string_view) {});
    const FleetOpenReport opened =
        fleet.Open(port_, connections_, std::chrono::seconds(120), kIdleOpenAtOnce);
    if (opened.opened != connections_) {
      return fail("opened " + std::to_string(opened.opened) + " of " +
                  std::to_string(connections_) + " idle connections: " + opened.first_error);
    }
    auto counters = [&fleet] {
      HostileCounters c;
      c.reopened = c.ended_since_in_place = fleet.lost();
      c.open = c.held = fleet.open();
      return c;
    };
    publish(true, counters());
    while (!stop_) {
      fleet.RunFor(kTick);
      publish(true, counters());
    }
    return;
  }
  Runner runner(kind_, port_, connections_);
  std::string why;
  if (!runner.OpenAll(&why)) return fail(why);
  bool in_place = false;
  while (!stop_) {
    runner.Step();
    if (!in_place && runner.InPlace()) {
      runner.MarkInPlace();
      in_place = true;
    }
    publish(in_place, runner.Counters());
  }
}

}  // namespace skiff::bench
