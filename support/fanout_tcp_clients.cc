// The FanoutClients over plain TCP (support/fanout_client.h): Redis pub/sub
// in RESP2 and NATS, on one fanout_tcp_fleet.h fleet whose last connection
// is the writer. Neither needs a library: each speaks the few messages the
// family uses (support/fanout_wire.h).
#include <deque>
#include <string>
#include <vector>

#include "support/fanout_client.h"
#include "support/fanout_tcp_fleet.h"
#include "support/fanout_wire.h"

namespace skiff::bench {
namespace {

constexpr size_t kConnectAtOnce = 256;

// What the two share: the fleet, the writer's queue of writes waiting for
// their acknowledgement (both servers answer in order), and the error.
class TcpFanoutClient : public FanoutClient {
 public:
  TcpFanoutClient() : fleet_([this](size_t i, std::string_view in) { return OnBytes(i, in); }) {}

  bool RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout) override {
    return fleet_.RunUntil([&] { return done() || !error().empty(); }, timeout) && error().empty();
  }
  size_t open_watchers() const override {
    size_t n = 0;
    for (size_t i = 0; i < watchers_; ++i) n += fleet_.is_open(i) ? 1 : 0;
    return n;
  }
  const std::string& error() const override {
    if (error_.empty() && fleet_.lost() > 0) {
      error_ = std::to_string(fleet_.lost()) + " connections lost: " + fleet_.first_error();
    }
    return error_;
  }
  void Close() override { fleet_.CloseAll(); }

 protected:
  // Parses what connection i received; returns the bytes consumed.
  virtual size_t OnBytes(size_t i, std::string_view in) = 0;

  Status Open(uint16_t port, size_t watchers, std::chrono::milliseconds timeout) {
    watchers_ = watchers;
    const size_t opened = fleet_.Open(port, watchers + 1, timeout, kConnectAtOnce);
    if (opened != watchers + 1) {
      return Unavailable("opened " + std::to_string(opened) + " of " +
                         std::to_string(watchers + 1) + ": " + fleet_.first_error());
    }
    return Status::Ok();
  }
  // Runs until `count` reaches `want`; unavailable naming `what` otherwise.
  Status Await(const size_t& count, size_t want, std::chrono::nanoseconds timeout,
               const std::string& what) {
    if (RunUntil([&] { return count >= want; }, timeout)) return Status::Ok();
    return Unavailable(what + ": " + (error().empty() ? std::string("timed out") : error()));
  }
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  void Ack() {
    if (unacked_.empty()) return Fail("an acknowledgement of no write");
    const uint64_t write = unacked_.front();
    unacked_.pop_front();
    on_ack_(write);
  }

  TcpFleet fleet_;
  size_t watchers_ = 0;
  size_t confirmed_ = 0;  // connections ready, then subscriptions confirmed
  std::deque<uint64_t> unacked_;
  mutable std::string error_;
};

class RedisFanoutClient : public TcpFanoutClient {
 public:
  // Each connection makes one request (PING) before it counts as
  // connected, as the others log in: what a first request allocates is
  // then not counted as the memory of a watch.
  Status Connect(uint16_t port, size_t watchers, std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    SKIFF_RETURN_IF_ERROR(Open(port, watchers, timeout));
    confirmed_ = 0;
    for (size_t i = 0; i <= watchers; ++i) fleet_.Send(i, RespCommand({"PING"}));
    SKIFF_RETURN_IF_ERROR(
        Await(confirmed_, watchers + 1, deadline - std::chrono::steady_clock::now(), "connect"));
    confirmed_ = 0;
    return Status::Ok();
  }

  Status Subscribe(const std::vector<FanoutTopic>& topics,
                   std::chrono::milliseconds timeout) override {
    confirmed_ = 0;
    for (size_t i = 0; i < topics.size(); ++i) {
      const FanoutTopic& t = topics[i];
      fleet_.Send(i, t.prefix ? RespCommand({"PSUBSCRIBE", t.name + "*"})
                              : RespCommand({"SUBSCRIBE", t.name}));
    }
    return Await(confirmed_, topics.size(), timeout, "subscribe");
  }

  void Publish(uint64_t write, const std::string& key, const std::string& value) override {
    unacked_.push_back(write);
    fleet_.Send(watchers_, RespCommand({"PUBLISH", key, value}));
  }

 private:
  size_t OnBytes(size_t i, std::string_view in) override {
    size_t used = 0;
    RespMessage m;
    for (;;) {
      const size_t n = ParseResp(in.substr(used), &m);
      if (n == 0) return used;
      if (n == kMalformed) {
        Fail("not RESP: " + std::string(in.substr(used, 80)));
        return in.size();
      }
      used += n;
      if (m.type == '+' && m.text == "PONG") {
        ++confirmed_;
      } else if (i == watchers_) {
        if (m.type == ':') {
          Ack();
        } else {
          Fail("PUBLISH answered: " + std::string(m.text));
        }
      } else if (m.type == '*' && m.count == 3 && m.items[0] == "message") {
        on_delivery_({i, m.items[1], m.items[2]});
      } else if (m.type == '*' && m.count == 4 && m.items[0] == "pmessage") {
        on_delivery_({i, m.items[2], m.items[3]});
      } else if (m.type == '*' && m.count == 3 &&
                 (m.items[0] == "subscribe" || m.items[0] == "psubscribe")) {
        ++confirmed_;
      } else {
        Fail("unexpected RESP on a watcher: " + std::string(1, m.type) + std::string(m.text));
      }
    }
  }
};

class NatsFanoutClient : public TcpFanoutClient {
 public:
  Status Connect(uint16_t port, size_t watchers, std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pongs_.assign(watchers + 1, 0);
    confirmed_ = 0;
    SKIFF_RETURN_IF_ERROR(Open(port, watchers, timeout));
    // Each connection says CONNECT once the server's INFO came, then
    // PING: its PONG says it is ready.
    return Await(confirmed_, watchers + 1, deadline - std::chrono::steady_clock::now(), "connect");
  }

  Status Subscribe(const std::vector<FanoutTopic>& topics,
                   std::chrono::milliseconds timeout) override {
    confirmed_ = 0;
    for (size_t i = 0; i < topics.size(); ++i) {
      const FanoutTopic& t = topics[i];
      const std::string subject = NatsSubject(t.name) + (t.prefix ? ">" : "");
      fleet_.Send(i, "SUB " + subject + " 1\r\nPING\r\n");
    }
    return Await(confirmed_, topics.size(), timeout, "subscribe");
  }

  void Publish(uint64_t write, const std::string& key, const std::string& value) override {
    unacked_.push_back(write);
    fleet_.Send(watchers_, "PUB " + NatsSubject(key) + " " + std::to_string(value.size()) + "\r\n" +
                               value + "\r\nPING\r\n");
  }

 private:
  size_t OnBytes(size_t i, std::string_view in) override {
    size_t used = 0;
    NatsMessage m;
    for (;;) {
      const size_t n = ParseNats(in.substr(used), &m);
      if (n == 0) return used;
      if (n == kMalformed) {
        Fail("not NATS: " + std::string(in.substr(used, 80)));
        return in.size();
      }
      used += n;
      switch (m.kind) {
        case NatsMessage::Kind::kInfo:
          fleet_.Send(i, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n");
          break;
        case NatsMessage::Kind::kPing:
          fleet_.Send(i, "PONG\r\n");
          break;
        case NatsMessage::Kind::kPong:
          // The first PONG: connected; then a watcher's subscription, or
          // the writer's next write.
          if (pongs_[i]++ == 0 || i != watchers_) {
            ++confirmed_;
          } else {
            Ack();
          }
          break;
        case NatsMessage::Kind::kMsg:
          key_ = KeyOfNatsSubject(m.subject);
          if (i == watchers_) {
            Fail("a message to the writer");
          } else {
            on_delivery_({i, key_, m.payload});
          }
          break;
        case NatsMessage::Kind::kOk:
          break;
        case NatsMessage::Kind::kErr:
          Fail(std::string(m.payload));
          break;
      }
    }
  }

  std::vector<uint32_t> pongs_;
  std::string key_;
};

}  // namespace

std::unique_ptr<FanoutClient> NewRedisFanoutClient() {
  return std::make_unique<RedisFanoutClient>();
}

std::unique_ptr<FanoutClient> NewNatsFanoutClient() { return std::make_unique<NatsFanoutClient>(); }

}  // namespace skiff::bench
