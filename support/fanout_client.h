// FanoutClient: the fan-out family's load side, one per server protocol:
// N watcher connections and one writer connection, all on the calling
// thread (one epoll loop), speaking skiffd's watch, the WebSocket pub/sub
// peers of bench/peers/fanout_peer*, Redis SUBSCRIBE/PUBLISH or NATS.
//
// A watcher follows one topic: a key, or a prefix of keys ("g3/"). The
// writer publishes a value (JSON text) to a key; a watcher following the
// key, or a prefix of it, receives it. Each delivery is handed over with
// the key, the value text exactly as it arrived and the server's version
// (skiffd; 0 for the others), so the caller checks every one; each
// acknowledgement of the writer names the write.
//
// Not thread-safe: one thread owns a client.
#ifndef SKIFF_SUPPORT_FANOUT_CLIENT_H_
#define SKIFF_SUPPORT_FANOUT_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace skiff::bench {

// What a watcher follows.
struct FanoutTopic {
  std::string name;  // a key, or a prefix ending in '/'
  bool prefix = false;
};

// A delivery to watcher `watcher`. `coalesced`: the server says values in
// between were skipped (skiffd, a slow reader).
struct FanoutDelivery {
  size_t watcher = 0;
  std::string_view key;
  std::string_view value;
  uint64_t version = 0;
  bool coalesced = false;
};

class FanoutClient {
 public:
  using OnDelivery = std::function<void(const FanoutDelivery&)>;
  using OnAck = std::function<void(uint64_t write)>;

  virtual ~FanoutClient() = default;

  // Opens `watchers` watcher connections and the writer to
  // 127.0.0.1:`port`, each ready for requests (logged in with `login`'s
  // user and secret where the server has logins). unavailable when one
  // did not open or was refused within `timeout`.
  virtual Status Connect(uint16_t port, size_t watchers, std::chrono::milliseconds timeout) = 0;

  // Watcher i follows topics[i]; returns once every one is confirmed.
  // unavailable on a refusal or a timeout.
  virtual Status Subscribe(const std::vector<FanoutTopic>& topics,
                           std::chrono::milliseconds timeout) = 0;

  // Sends write number `write` (increasing from 0): `value` to `key`.
  virtual void Publish(uint64_t write, const std::string& key, const std::string& value) = 0;

  // Runs the loop until done() holds or `timeout` passed; false on timeout.
  virtual bool RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout) = 0;

  // Watcher connections open now.
  virtual size_t open_watchers() const = 0;
  // What went wrong so far (a connection lost, a refusal, a frame that
  // is neither a delivery nor an expected reply); empty while all is well.
  virtual const std::string& error() const = 0;

  // Closes every connection.
  virtual void Close() = 0;

  void set_on_delivery(OnDelivery f) { on_delivery_ = std::move(f); }
  void set_on_ack(OnAck f) { on_ack_ = std::move(f); }

 protected:
  OnDelivery on_delivery_ = [](const FanoutDelivery&) {};
  OnAck on_ack_ = [](uint64_t) {};
};

// The WebSocket servers: skiffd (login, `watch`, `set` on table `table`)
// or a bench/peers fan-out peer (login, `subscribe`, `publish`).
struct FanoutLogin {
  std::string user;
  std::string secret;
};
std::unique_ptr<FanoutClient> NewSkiffdFanoutClient(FanoutLogin login, std::string table);
std::unique_ptr<FanoutClient> NewWsPeerFanoutClient(FanoutLogin login);
// A skiffd watcher that stops reading: one blocking connection whose
// receive buffer is made small before it connects, so the server's side of
// it fills soon once it stops reading. It logs in, watches a key, reads the
// watch's reply and then nothing more until Drain, which reads whatever the
// server sent meanwhile (replies to FillPipe's requests, then the watch's
// events). For the fan-out family's slow-reader
// case: skiffd bounds what it queues for such a connection (docs/protocol.md,
// "watch / unwatch"). Not thread-safe: one owner.
class StalledWatcher {
 public:
  StalledWatcher(FanoutLogin login, std::string table);
  ~StalledWatcher();  // closes the connection
  StalledWatcher(const StalledWatcher&) = delete;
  StalledWatcher& operator=(const StalledWatcher&) = delete;

  // Connects to 127.0.0.1:`port` with SO_RCVBUF `receive_buffer`, upgrades
  // and logs in. unavailable on a refusal, a lost connection or `timeout`.
  Status Connect(uint16_t port, int receive_buffer, std::chrono::milliseconds timeout);
  // Watches `key` and reads until its reply (frames that came with the
  // reply are kept for Drain). unavailable on a refusal or timeout.
  Status Watch(std::string_view key, std::chrono::milliseconds timeout);
  // Sets a key of its own to a value of `value_bytes` and asks for it
  // `reads` times, reading no reply: so the kernel's buffers between it
  // and the server (on loopback, a few hundred KB once the server's send
  // buffer has grown) and the server's unsent output are full before the
  // watched changes come. unavailable when a request cannot be sent.
  Status FillPipe(size_t value_bytes, size_t reads);
  // Reads the connection again: on_text(payload) for every text message
  // received since the watch's reply, until it returns false. unavailable
  // when the connection ended or broke RFC 6455 first, or at `timeout`.
  Status Drain(const std::function<bool(std::string_view)>& on_text,
               std::chrono::milliseconds timeout);

 private:
  struct Input;
  Status Send(std::string_view text);
  // Reads until on_text returns false (or the deadline).
  Status ReadUntil(const std::function<bool(std::string_view)>& on_text,
                   std::chrono::steady_clock::time_point deadline);

  FanoutLogin login_;
  std::string table_;
  int fd_ = -1;
  std::unique_ptr<Input> input_;
};

// Redis: SUBSCRIBE key / PSUBSCRIBE prefix*; the PUBLISH reply is the ack.
std::unique_ptr<FanoutClient> NewRedisFanoutClient();
// NATS: keys as subjects with '.' for '/', a prefix as "g3.>"; a PING after
// each PUB, its PONG the ack.
std::unique_ptr<FanoutClient> NewNatsFanoutClient();

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_FANOUT_CLIENT_H_
