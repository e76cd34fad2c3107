// The WebSocket FanoutClients (support/fanout_client.h): skiffd's watch and
// the pub/sub peers of bench/peers/fanout_peer*, on one ws_fleet.h fleet
// whose last connection is the writer.
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/fanout_client.h"
#include "support/fanout_wire.h"
#include "support/frame_input.h"
#include "support/ws_fleet.h"

#include "ws/frame.h"
#include "ws/handshake.h"

namespace skiff::bench {
namespace {

// Request ids: 1 for login, 2 for a watcher's subscription, and a write's
// number plus kFirstWriteId for the writer's writes.
constexpr uint64_t kLoginId = 1;
constexpr uint64_t kSubscribeId = 2;
constexpr uint64_t kFirstWriteId = 10;
// Connections connecting at once: below every listen backlog compared.
constexpr size_t kConnectAtOnce = 256;
// The stalled watcher's TCP segment size (the least Linux takes is 88).
constexpr int kStalledSegmentBytes = 536;

class WsFanoutClient : public FanoutClient {
 public:
  // `table` empty: a pub/sub peer; else skiffd, writing and watching it.
  WsFanoutClient(FanoutLogin login, std::string table)
      : login_(std::move(login)),
        table_(std::move(table)),
        fleet_([this](size_t i, std::string_view payload) { OnText(i, payload); }) {}

  Status Connect(uint16_t port, size_t watchers, std::chrono::milliseconds timeout) override {
    watchers_ = watchers;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    FleetOpenReport opened = fleet_.Open(port, watchers + 1, timeout, kConnectAtOnce);
    if (opened.opened != watchers + 1) {
      return Unavailable("opened " + std::to_string(opened.opened) + " of " +
                         std::to_string(watchers + 1) + ": " + opened.first_error);
    }
    const std::string frame = R"({"id":1,"op":"login","user":)" + JsonString(login_.user) +
                              R"(,"secret":)" + JsonString(login_.secret) + "}";
    replies_ = 0;
    for (size_t i = 0; i <= watchers; ++i) fleet_.Send(i, frame);
    if (!fleet_.RunUntil([&] { return replies_ == watchers + 1 || !error_.empty(); },
                         deadline - std::chrono::steady_clock::now()) ||
        !error_.empty()) {
      return Unavailable("login: " + (error_.empty() ? std::string("timed out") : error_));
    }
    return Status::Ok();
  }

  Status Subscribe(const std::vector<FanoutTopic>& topics,
                   std::chrono::milliseconds timeout) override {
    replies_ = 0;
    for (size_t i = 0; i < topics.size() && i < watchers_; ++i) {
      const FanoutTopic& t = topics[i];
      std::string frame;
      if (table_.empty()) {
        frame = R"({"id":2,"op":"subscribe","topic":)" + JsonString(t.name) + "}";
      } else {
        frame = R"({"id":2,"op":"watch","table":)" + JsonString(table_) +
                (t.prefix ? R"(,"prefix":)" : R"(,"key":)") + JsonString(t.name) + "}";
      }
      fleet_.Send(i, frame);
    }
    if (!fleet_.RunUntil([&] { return replies_ == topics.size() || !error_.empty(); }, timeout) ||
        !error_.empty()) {
      return Unavailable("subscribe: " + (error_.empty() ? std::string("timed out") : error_));
    }
    return Status::Ok();
  }

  void Publish(uint64_t write, const std::string& key, const std::string& value) override {
    const std::string id = std::to_string(write + kFirstWriteId);
    if (table_.empty()) {
      fleet_.Send(watchers_, R"({"id":)" + id + R"(,"op":"publish","key":)" + JsonString(key) +
                                 R"(,"value":)" + value + "}");
    } else {
      fleet_.Send(watchers_, R"({"id":)" + id + R"(,"op":"set","table":)" + JsonString(table_) +
                                 R"(,"key":)" + JsonString(key) + R"(,"value":)" + value + "}");
    }
  }

  bool RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout) override {
    return fleet_.RunUntil([&] { return done() || !error().empty(); }, timeout) && error().empty();
  }

  size_t open_watchers() const override {
    size_t n = 0;
    for (size_t i = 0; i < watchers_; ++i) n += fleet_.is_open(i) ? 1 : 0;
    return n;
  }
  const std::string& error() const override {
    if (error_.empty() && (fleet_.lost() > 0 || fleet_.protocol_errors() > 0)) {
      error_ = std::to_string(fleet_.lost()) + " connections lost, " +
               std::to_string(fleet_.protocol_errors()) + " broke RFC 6455";
    }
    return error_;
  }
  void Close() override { fleet_.CloseAll(std::chrono::seconds(30)); }

 private:
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

  void OnText(size_t i, std::string_view payload) {
    if (payload.starts_with(R"({"event":"change",)")) {
      FanoutDelivery d;
      d.watcher = i;
      if (i == watchers_ || !ParseChange(payload, &d)) {
        return Fail("not a change event: " + std::string(payload.substr(0, 200)));
      }
      return on_delivery_(d);
    }
    uint64_t id = 0;
    if (!payload.starts_with(R"({"id":)") || !ParseNumber(payload, R"("id":)", &id)) {
      return Fail("unexpected frame: " + std::string(payload.substr(0, 200)));
    }
    if (payload.find(R"("ok":true)") == std::string_view::npos) {
      return Fail("refused: " + std::string(payload.substr(0, 200)));
    }
    if (id == kLoginId || id == kSubscribeId) {
      ++replies_;
    } else if (i == watchers_ && id >= kFirstWriteId) {
      on_ack_(id - kFirstWriteId);
    } else {
      Fail("reply to no request: " + std::string(payload.substr(0, 200)));
    }
  }

  FanoutLogin login_;
  std::string table_;
  Fleet fleet_;
  size_t watchers_ = 0;
  size_t replies_ = 0;
  mutable std::string error_;
};

// A reply to request `id` (true when it says ok), or false.
bool IsReply(std::string_view payload, uint64_t id, bool* ok) {
  uint64_t got = 0;
  if (!payload.starts_with(R"({"id":)") || !ParseNumber(payload, R"("id":)", &got) || got != id) {
    return false;
  }
  *ok = payload.find(R"("ok":true)") != std::string_view::npos;
  return true;
}

}  // namespace

struct StalledWatcher::Input {
  FrameInput frames;
  ws::MaskKeys keys;
};

StalledWatcher::StalledWatcher(FanoutLogin login, std::string table)
    : login_(std::move(login)), table_(std::move(table)), input_(std::make_unique<Input>()) {}

StalledWatcher::~StalledWatcher() {
  if (fd_ >= 0) ::close(fd_);
}

Status StalledWatcher::Connect(uint16_t port, int receive_buffer,
                               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Unavailable("socket failed");
  // Before connect, so the window the connection offers is small from the
  // start; and a small segment size, since Linux sizes the server's send
  // buffer from it at connect (ten segments twice over: on loopback's
  // 64 KiB segments, megabytes the server could park in the kernel).
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  const int segment = kStalledSegmentBytes;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_MAXSEG, &segment, sizeof(segment));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Unavailable("connect to port " + std::to_string(port) + " failed");
  }
  const std::string key = ws::NewClientKey();
  const std::string request = ws::ClientRequest("127.0.0.1:" + std::to_string(port), key);
  if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) {
    return Unavailable("the upgrade request was not sent");
  }
  // The server sends nothing after its 101 until asked, so whole reads
  // take no frame's bytes.
  std::string head;
  for (;;) {
    size_t head_bytes = 0;
    std::string why;
    const ws::ResponseResult r = ws::ParseUpgradeResponse(head, key, &head_bytes, &why);
    if (r == ws::ResponseResult::kAccepted) break;
    if (r == ws::ResponseResult::kRefused) return Unavailable("upgrade refused: " + why);
    const auto left = deadline - std::chrono::steady_clock::now();
    pollfd p{fd_, POLLIN, 0};
    if (left <= std::chrono::nanoseconds(0) ||
        ::poll(&p, 1, int(std::chrono::ceil<std::chrono::milliseconds>(left).count())) <= 0) {
      return Unavailable("the upgrade timed out");
    }
    char buf[1024];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return Unavailable("the connection ended during the upgrade");
    head.append(buf, size_t(n));
  }
  SKIFF_RETURN_IF_ERROR(Send(R"({"id":1,"op":"login","user":)" + JsonString(login_.user) +
                             R"(,"secret":)" + JsonString(login_.secret) + "}"));
  bool ok = false;
  SKIFF_RETURN_IF_ERROR(ReadUntil(
      [&](std::string_view payload) { return !IsReply(payload, kLoginId, &ok); }, deadline));
  return ok ? Status::Ok() : Unavailable("login refused");
}

Status StalledWatcher::Watch(std::string_view key, std::chrono::milliseconds timeout) {
  SKIFF_RETURN_IF_ERROR(Send(R"({"id":2,"op":"watch","table":)" + JsonString(table_) +
                             R"(,"key":)" + JsonString(key) + "}"));
  bool ok = false;
  SKIFF_RETURN_IF_ERROR(
      ReadUntil([&](std::string_view payload) { return !IsReply(payload, kSubscribeId, &ok); },
                std::chrono::steady_clock::now() + timeout));
  return ok ? Status::Ok() : Unavailable("watch refused");
}

Status StalledWatcher::FillPipe(size_t value_bytes, size_t reads) {
  const std::string key = JsonString("stalled-fill");
  SKIFF_RETURN_IF_ERROR(Send(R"({"id":3,"op":"set","table":)" + JsonString(table_) + R"(,"key":)" +
                             key + R"(,"value":)" + JsonString(std::string(value_bytes, 'f')) +
                             "}"));
  for (size_t i = 0; i < reads; ++i) {
    SKIFF_RETURN_IF_ERROR(
        Send(R"({"id":3,"op":"get","table":)" + JsonString(table_) + R"(,"key":)" + key + "}"));
  }
  return Status::Ok();
}

Status StalledWatcher::Drain(const std::function<bool(std::string_view)>& on_text,
                             std::chrono::milliseconds timeout) {
  return ReadUntil(on_text, std::chrono::steady_clock::now() + timeout);
}

Status StalledWatcher::Send(std::string_view text) {
  std::string frame;
  ws::AppendMaskedFrame(frame, ws::Opcode::kText, text, input_->keys.Next());
  if (::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL) != ssize_t(frame.size())) {
    return Unavailable("a request was not sent");
  }
  return Status::Ok();
}

Status StalledWatcher::ReadUntil(const std::function<bool(std::string_view)>& on_text,
                                 std::chrono::steady_clock::time_point deadline) {
  FrameInput& in = input_->frames;
  for (;;) {
    bool done = false;
    bool closed = false;
    // Messages already received first: they may hold what is asked for.
    const bool valid = in.Drain([&](const ws::Message& m) {
      if (m.opcode == ws::Opcode::kClose) closed = true;
      if (m.opcode != ws::Opcode::kText) return !closed;
      done = !on_text(m.payload);
      return !done;
    });
    if (!valid) return Unavailable("the server broke RFC 6455: " + in.error());
    if (done) return Status::Ok();
    if (closed) return Unavailable("the server closed the connection");
    const auto left = deadline - std::chrono::steady_clock::now();
    pollfd p{fd_, POLLIN, 0};
    if (left <= std::chrono::nanoseconds(0) ||
        ::poll(&p, 1, int(std::chrono::ceil<std::chrono::milliseconds>(left).count())) <= 0) {
      return Unavailable("timed out");
    }
    FrameInput::Span space = in.Space();
    const ssize_t n = ::recv(fd_, space.data, space.size, 0);
    if (n <= 0) return Unavailable("the connection ended");
    in.Commit(size_t(n));
  }
}

std::unique_ptr<FanoutClient> NewSkiffdFanoutClient(FanoutLogin login, std::string table) {
  return std::make_unique<WsFanoutClient>(std::move(login), std::move(table));
}

std::unique_ptr<FanoutClient> NewWsPeerFanoutClient(FanoutLogin login) {
  return std::make_unique<WsFanoutClient>(std::move(login), "");
}

}  // namespace skiff::bench
