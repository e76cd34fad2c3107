#include "client/internal/pooled_connection.h"

#include <optional>
#include <string_view>
#include <utility>

namespace skiff::client::internal {
namespace {

Result<doc::Value> ParseReply(const doc::Value& reply) {
  auto ok = reply.find("ok");
  if (ok != reply.end() && ok->is_boolean() && ok->get<bool>()) return reply;
  auto error = reply.find("error");
  if (error == reply.end() || !error->is_object()) {
    return Internal("reply is neither ok nor an error: " + reply.dump());
  }
  std::string code = error->value("code", "internal");
  std::string message = error->value("message", "");
  return Status(StatusCodeFromName(code).value_or(StatusCode::kInternal), std::move(message));
}

// The id of a reply that starts the way the server writes every successful
// one, `{"id":N,"ok":true` and then ',' or '}'; nullopt for anything else
// (which is parsed in full).
std::optional<uint64_t> OkReplyId(std::string_view payload) {
  constexpr std::string_view kHead = "{\"id\":", kOk = ",\"ok\":true";
  if (payload.substr(0, kHead.size()) != kHead) return std::nullopt;
  size_t i = kHead.size();
  uint64_t id = 0;
  const size_t first_digit = i;
  while (i < payload.size() && payload[i] >= '0' && payload[i] <= '9' && i - first_digit < 19) {
    id = id * 10 + static_cast<uint64_t>(payload[i] - '0');
    ++i;
  }
  if (i == first_digit || payload.substr(i, kOk.size()) != kOk) return std::nullopt;
  i += kOk.size();
  if (i >= payload.size() || (payload[i] != ',' && payload[i] != '}')) return std::nullopt;
  return id;
}

}  // namespace

PooledConnection::PooledConnection(Transport& transport, const ClientOptions& options,
                                   const Clock& clock, std::atomic<uint64_t>& next_id)
    : transport_(transport), options_(options), clock_(clock), next_id_(next_id) {}

void PooledConnection::Start(std::promise<Status> ready) {
  {
    MutexLock lock(&mu_);
    ready_promise_ = std::move(ready);
  }
  Connect();
}

void PooledConnection::Connect() {
  std::weak_ptr<PooledConnection> weak = weak_from_this();
  TransportHandlers handlers;
  handlers.on_open = [weak] {
    if (auto self = weak.lock()) self->OnOpen();
  };
  handlers.on_message = [weak](std::string& payload, bool binary) {
    if (auto self = weak.lock()) self->OnMessage(payload, binary);
  };
  handlers.on_close = [weak](const std::string& reason) {
    if (auto self = weak.lock()) self->OnClose(reason);
  };
  MutexLock lock(&mu_);
  if (state_ == State::kShutdown) return;
  state_ = State::kConnecting;
  last_error_ = Status::Ok();
  const TransportTls tls{
      .enabled = options_.tls, .ca_file = options_.tls_ca_file, .insecure = options_.tls_insecure};
  conn_ = transport_.Open(options_.host, options_.port, tls, std::move(handlers));
}

void PooledConnection::SignalReady(const Status& status) {
  if (ready_promise_) {
    ready_promise_->set_value(status);
    ready_promise_.reset();
  }
}

void PooledConnection::SendLocked(const std::string& body, ReplyCallback done, TextCallback text,
                                  Clock::TimePoint deadline) {
  uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  std::string frame = "{\"id\":" + std::to_string(id);
  if (body.size() > 2) {
    frame += ',';
    frame.append(body, 1, std::string::npos);
  } else {
    frame += '}';
  }
  in_flight_.emplace(id, InFlight{std::move(done), std::move(text), deadline});
  if (tally_ != nullptr) {
    tally_->frames_sent.fetch_add(1, std::memory_order_relaxed);
    tally_->bytes_sent.fetch_add(frame.size(), std::memory_order_relaxed);
  }
  // A failed send means the connection is going down; OnClose fails it.
  conn_->SendText(frame);
}

void PooledConnection::Submit(std::string body, ReplyCallback done, TextCallback text) {
  Actions actions;
  {
    MutexLock lock(&mu_);
    if (state_ == State::kFailed || state_ == State::kShutdown) {
      actions.emplace_back(std::move(done), state_ == State::kFailed
                                                ? failed_
                                                : Unavailable("the client is shut down"));
    } else {
      load_.fetch_add(1, std::memory_order_relaxed);
      Clock::TimePoint deadline = clock_.Now() + options_.request_timeout;
      if (state_ == State::kReady && queue_.empty() && in_flight_.size() < options_.max_in_flight) {
        SendLocked(body, std::move(done), std::move(text), deadline);
      } else {
        queue_.push_back({std::move(body), std::move(done), std::move(text), deadline});
      }
    }
  }
  Run(actions);
}

void PooledConnection::DrainLocked(Actions& /*actions*/) {
  while (state_ == State::kReady && !queue_.empty() && in_flight_.size() < options_.max_in_flight) {
    Waiting w = std::move(queue_.front());
    queue_.pop_front();
    SendLocked(w.body, std::move(w.done), std::move(w.text), w.deadline);
  }
}

void PooledConnection::OnOpen() {
  Actions actions;
  {
    MutexLock lock(&mu_);
    if (state_ != State::kConnecting) return;
    if (options_.user.empty()) {
      BecomeReadyLocked(actions);
    } else {
      state_ = State::kLoggingIn;
      doc::Value login = {{"op", "login"}, {"user", options_.user}, {"secret", options_.secret}};
      std::weak_ptr<PooledConnection> weak = weak_from_this();
      // The login counts as load until answered, like any request.
      load_.fetch_add(1, std::memory_order_relaxed);
      SendLocked(
          login.dump(),
          [weak](Result<doc::Value> reply) {
            if (auto self = weak.lock()) self->OnLogin(reply);
          },
          nullptr, clock_.Now() + options_.request_timeout);
    }
  }
  Run(actions);
}

void PooledConnection::BecomeReadyLocked(Actions& actions) {
  if (was_ready_ && on_reconnected_) {
    // Run with the other callbacks, once mu_ is let go.
    actions.emplace_back([fn = on_reconnected_](const Result<doc::Value>&) { fn(); }, doc::Value());
  }
  state_ = State::kReady;
  was_ready_ = true;
  ready_.store(true);
  SignalReady(Status::Ok());
  DrainLocked(actions);
}

void PooledConnection::OnLogin(const Result<doc::Value>& reply) {
  Actions actions;
  {
    MutexLock lock(&mu_);
    if (state_ != State::kLoggingIn) return;
    if (reply.ok()) {
      BecomeReadyLocked(actions);
    } else {
      // Wrong credentials do not get better by reconnecting.
      state_ = State::kFailed;
      failed_ = reply.status();
      SignalReady(failed_);
      FailAllLocked(failed_, /*include_queued=*/true, actions);
      conn_->Close();
    }
  }
  Run(actions);
}

void PooledConnection::OnMessage(std::string& payload, bool binary) {
  if (tally_ != nullptr) {
    tally_->frames_received.fetch_add(1, std::memory_order_relaxed);
    tally_->bytes_received.fetch_add(payload.size(), std::memory_order_relaxed);
  }
  if (binary) return;  // the protocol has none; ignore rather than guess
  if (std::optional<uint64_t> id = OkReplyId(payload)) {
    TextCallback text;
    {
      MutexLock lock(&mu_);
      auto it = in_flight_.find(*id);
      if (it == in_flight_.end()) return;  // timed out already
      if (it->second.text) {
        text = std::move(it->second.text);
        in_flight_.erase(it);
        load_.fetch_sub(1, std::memory_order_relaxed);
        Actions none;
        DrainLocked(none);
      }
    }
    if (text) {
      // Handed over, not copied: a bootstrap page is hundreds of kilobytes.
      text(std::move(payload));
      return;
    }
  }
  Result<doc::Value> parsed_reply = doc::Parse(payload, doc::kNoLimits);
  if (!parsed_reply.ok() || !parsed_reply->is_object()) return;
  doc::Value& reply = *parsed_reply;
  if (on_event_ && !reply.contains("id") && reply.contains("event")) {
    on_event_(reply);  // a watch's event: no request of ours
    return;
  }
  Actions actions;
  {
    MutexLock lock(&mu_);
    auto id = reply.find("id");
    if (id == reply.end() || !id->is_number_unsigned()) {
      // An error about the connection rather than a request (e.g. a frame
      // over the server's limit): it explains the close that follows.
      Result<doc::Value> parsed = ParseReply(reply);
      if (!parsed.ok()) last_error_ = parsed.status();
      return;
    }
    auto it = in_flight_.find(id->get<uint64_t>());
    if (it == in_flight_.end()) return;  // timed out already
    actions.emplace_back(std::move(it->second.done), ParseReply(reply));
    in_flight_.erase(it);
    load_.fetch_sub(1, std::memory_order_relaxed);
    DrainLocked(actions);
  }
  Run(actions);
}

void PooledConnection::OnClose(const std::string& reason) {
  Actions actions;
  bool reconnect = false;
  {
    MutexLock lock(&mu_);
    ready_.store(false);
    Status why = last_error_.ok() ? Unavailable("connection closed: " + reason) : last_error_;
    if (state_ == State::kShutdown || state_ == State::kFailed) {
      FailAllLocked(state_ == State::kFailed ? failed_ : why, true, actions);
    } else if (!was_ready_ || !options_.reconnect) {
      state_ = State::kFailed;
      failed_ = why;
      SignalReady(why);
      FailAllLocked(why, true, actions);
    } else {
      // Requests on the wire are lost with the connection; queued ones wait
      // for the new connection (or their deadline).
      state_ = State::kDown;
      FailAllLocked(why, false, actions);
      reconnect = true;
    }
  }
  Run(actions);
  if (reconnect) {
    std::weak_ptr<PooledConnection> weak = weak_from_this();
    transport_.After(options_.reconnect_delay, [weak] {
      if (auto self = weak.lock()) self->Connect();
    });
  }
}

void PooledConnection::FailAllLocked(const Status& status, bool include_queued, Actions& actions) {
  for (auto& [id, req] : in_flight_) actions.emplace_back(std::move(req.done), status);
  load_.fetch_sub(in_flight_.size(), std::memory_order_relaxed);
  in_flight_.clear();
  if (!include_queued) return;
  for (Waiting& w : queue_) actions.emplace_back(std::move(w.done), status);
  load_.fetch_sub(queue_.size(), std::memory_order_relaxed);
  queue_.clear();
}

void PooledConnection::ExpireOverdue() {
  Actions actions;
  {
    MutexLock lock(&mu_);
    Clock::TimePoint now = clock_.Now();
    Status late =
        Unavailable("no reply within " + std::to_string(options_.request_timeout.count()) + " ms");
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      if (it->second.deadline <= now) {
        actions.emplace_back(std::move(it->second.done), late);
        it = in_flight_.erase(it);
        load_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        ++it;
      }
    }
    while (!queue_.empty() && queue_.front().deadline <= now) {
      actions.emplace_back(std::move(queue_.front().done), late);
      queue_.pop_front();
      load_.fetch_sub(1, std::memory_order_relaxed);
    }
    DrainLocked(actions);
  }
  Run(actions);
}

void PooledConnection::Shutdown() {
  Actions actions;
  {
    MutexLock lock(&mu_);
    if (state_ == State::kShutdown) return;
    state_ = State::kShutdown;
    ready_.store(false);
    Status closed = Unavailable("the client is shut down");
    SignalReady(closed);
    FailAllLocked(closed, true, actions);
    if (conn_) conn_->Close();
  }
  Run(actions);
}

void PooledConnection::Run(Actions& actions) {
  for (auto& [done, result] : actions) {
    if (done) done(std::move(result));
  }
  actions.clear();
}

}  // namespace skiff::client::internal
