// PooledConnection: one WebSocket of a Client's pool, with its own pipeline
// of requests in flight, a queue of requests waiting for room, login and
// reconnection.
//
// Submit is thread-safe; transport callbacks run on the transport's I/O
// thread. All mutable state is guarded by `mu_`; callbacks of requests run on
// the I/O thread (or, on Shutdown, the calling thread) without `mu_` held.
#ifndef SKIFF_CLIENT_INTERNAL_POOLED_CONNECTION_H_
#define SKIFF_CLIENT_INTERNAL_POOLED_CONNECTION_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "client/client_options.h"
#include "client/internal/transport.h"
#include "doc/document.h"

namespace skiff::client::internal {

using ReplyCallback = std::function<void(Result<doc::Value>)>;
// A successful reply as its JSON text, unparsed.
using TextCallback = std::function<void(std::string)>;

// Frames and payload bytes a client's connections sent and received, counted
// where frames leave and arrive (benchmarks report them as wire traffic).
struct WireTally {
  std::atomic<uint64_t> frames_sent{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> frames_received{0};
  std::atomic<uint64_t> bytes_received{0};
};

class PooledConnection : public std::enable_shared_from_this<PooledConnection> {
 public:
  PooledConnection(Transport& transport, const ClientOptions& options, const Clock& clock,
                   std::atomic<uint64_t>& next_id);

  // Starts connecting; `ready` is fulfilled with OK once requests can flow
  // (logged in when credentials are set) or with the first failure.
  void Start(std::promise<Status> ready);

  // Sends `body` (a request object's JSON text without "id") or queues it
  // until there is room; `done` gets the reply object or the error. With
  // `text` set, a successful reply in the usual `{"id":N,"ok":true,...` form
  // goes to `text` as it arrived, never parsed (anything else still goes to
  // `done`).
  void Submit(std::string body, ReplyCallback done, TextCallback text = nullptr);

  // Fails whatever is pending or queued and stops reconnecting.
  void Shutdown();

  // Fails requests past their deadline. Called periodically on the I/O thread.
  void ExpireOverdue();

  // For choosing a connection: requests in flight plus queued.
  size_t load() const { return load_.load(std::memory_order_relaxed); }
  bool ready() const { return ready_.load(std::memory_order_relaxed); }
  // Frames without an id that carry "event" (watch events) go to `on_event`,
  // in arrival order, on the I/O thread; `on_reconnected` runs there each
  // time the connection is ready again after it was lost. Set before Start.
  void set_event_handlers(std::function<void(const doc::Value&)> on_event,
                          std::function<void()> on_reconnected) {
    on_event_ = std::move(on_event);
    on_reconnected_ = std::move(on_reconnected);
  }
  // Where to count traffic (must outlive the connection); none by default.
  void set_wire_tally(WireTally* tally) { tally_ = tally; }

 private:
  enum class State { kConnecting, kLoggingIn, kReady, kDown, kFailed, kShutdown };

  struct Waiting {
    std::string body;
    ReplyCallback done;
    TextCallback text;
    Clock::TimePoint deadline;
  };
  struct InFlight {
    ReplyCallback done;
    TextCallback text;
    Clock::TimePoint deadline;
  };
  // Callbacks to run once `mu_` is released (frames are sent under `mu_`
  // so one connection's requests leave in the order they were made).
  using Actions = std::vector<std::pair<ReplyCallback, Result<doc::Value>>>;

  void Connect();
  void OnOpen();
  // `payload` may be moved from (see TransportHandlers).
  void OnMessage(std::string& payload, bool binary);
  void OnClose(const std::string& reason);
  void OnLogin(const Result<doc::Value>& reply);
  // Moves queued requests into flight while there is room.
  void DrainLocked(Actions& actions) SKIFF_REQUIRES(mu_);
  // Connected (and logged in when a user is set): serve what waited.
  void BecomeReadyLocked(Actions& actions) SKIFF_REQUIRES(mu_);
  void SendLocked(const std::string& body, ReplyCallback done, TextCallback text,
                  Clock::TimePoint deadline) SKIFF_REQUIRES(mu_);
  void FailAllLocked(const Status& status, bool include_queued, Actions& actions)
      SKIFF_REQUIRES(mu_);
  void SignalReady(const Status& status) SKIFF_REQUIRES(mu_);
  static void Run(Actions& actions);

  Transport& transport_;
  const ClientOptions& options_;
  const Clock& clock_;
  std::atomic<uint64_t>& next_id_;
  WireTally* tally_ = nullptr;                       // set before Start
  std::function<void(const doc::Value&)> on_event_;  // set before Start
  std::function<void()> on_reconnected_;             // set before Start

  mutable Mutex mu_;
  State state_ SKIFF_GUARDED_BY(mu_) = State::kConnecting;
  std::shared_ptr<TransportConnection> conn_ SKIFF_GUARDED_BY(mu_);
  std::unordered_map<uint64_t, InFlight> in_flight_ SKIFF_GUARDED_BY(mu_);
  std::deque<Waiting> queue_ SKIFF_GUARDED_BY(mu_);
  Status last_error_ SKIFF_GUARDED_BY(mu_);  // error without id
  Status failed_ SKIFF_GUARDED_BY(mu_);      // why kFailed
  bool was_ready_ SKIFF_GUARDED_BY(mu_) = false;
  std::optional<std::promise<Status>> ready_promise_ SKIFF_GUARDED_BY(mu_);
  std::atomic<size_t> load_{0};
  std::atomic<bool> ready_{false};
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_POOLED_CONNECTION_H_
