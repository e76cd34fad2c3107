// RawSocket: a bare WebSocket to the server for tests that send frames the
// SDK never would (malformed JSON, binary, oversized). Frames received are
// queued; Next() waits for one with a bounded wait. Thread-safe.
#ifndef SKIFF_TEST_SERVER_RAW_SOCKET_H_
#define SKIFF_TEST_SERVER_RAW_SOCKET_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "client/internal/transport.h"
#include "doc/document.h"

namespace skiff::testing {

class RawSocket {
 public:
  explicit RawSocket(uint16_t port) : transport_(client::internal::Transport::Create()) {
    client::internal::TransportHandlers h;
    h.on_open = [this] {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
      cv_.notify_all();
    };
    h.on_message = [this](std::string_view payload, bool) {
      std::lock_guard<std::mutex> lock(mu_);
      frames_.emplace_back(payload);
      cv_.notify_all();
    };
    h.on_close = [this](const std::string&) {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      cv_.notify_all();
    };
    conn_ = transport_->Open("127.0.0.1", port, client::internal::TransportTls{}, std::move(h));
  }
  ~RawSocket() { transport_->Shutdown(); }

  bool WaitOpen() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return open_ || closed_; }) && open_;
  }

  void SendText(const std::string& text) { conn_->SendText(text); }
  void SendBinary(const std::string& bytes) { conn_->SendBinary(bytes); }

  // The next frame received, parsed; nullopt after 10 s or once closed with
  // nothing left.
  std::optional<doc::Value> Next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !frames_.empty() || closed_; });
    if (frames_.empty()) return std::nullopt;
    std::string frame = std::move(frames_.front());
    frames_.pop_front();
    Result<doc::Value> parsed = doc::Parse(frame, doc::kNoLimits);
    return parsed.ok() ? std::move(*parsed) : doc::Value(doc::Value::value_t::discarded);
  }

  std::optional<doc::Value> Exchange(const std::string& text) {
    SendText(text);
    return Next();
  }

  // True once the server closed the connection (waits up to 10 s).
  bool WaitClosed() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return closed_; });
  }

 private:
  std::unique_ptr<client::internal::Transport> transport_;
  std::shared_ptr<client::internal::TransportConnection> conn_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> frames_;  // guarded by mu_
  bool open_ = false;               // guarded by mu_
  bool closed_ = false;             // guarded by mu_
};

}  // namespace skiff::testing

#endif  // SKIFF_TEST_SERVER_RAW_SOCKET_H_
