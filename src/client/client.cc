#include "client/client.h"

#include <algorithm>
#include <chrono>

#include "client/internal/pooled_connection.h"
#include "client/internal/transport.h"
#include "client/internal/watch_registry.h"

namespace skiff::client {

class Client::Impl {
 public:
  explicit Impl(const ClientOptions& options)
      : options_(options),
        clock_(options.clock != nullptr ? *options.clock : system_clock_),
        transport_(internal::Transport::Create()) {}

  ~Impl() { Shutdown(); }

  Status Start() {
    if (options_.connections == 0) return BadRequest("connections must be at least 1");
    if (options_.max_in_flight == 0) return BadRequest("max_in_flight must be at least 1");
    std::vector<std::future<Status>> ready;
    for (size_t i = 0; i < options_.connections; ++i) {
      auto conn =
          std::make_shared<internal::PooledConnection>(*transport_, options_, clock_, next_id_);
      conn->set_wire_tally(&tally_);
      if (i == 0) {
        // Watches live on the first connection: its events carry no id.
        watches_ = std::make_shared<internal::WatchRegistry>(*conn);
        std::weak_ptr<internal::WatchRegistry> weak = watches_;
        conn->set_event_handlers(
            [weak](const doc::Value& event) {
              if (auto w = weak.lock()) w->OnEvent(event);
            },
            [weak] {
              if (auto w = weak.lock()) w->OnReconnected();
            });
      }
      std::promise<Status> promise;
      ready.push_back(promise.get_future());
      conn->Start(std::move(promise));
      conns_.push_back(std::move(conn));
    }
    ScheduleSweep();
    // The connections open in parallel, so waiting up to connect_timeout for
    // each in turn rarely adds up to more than one timeout.
    for (auto& f : ready) {
      if (f.wait_for(options_.connect_timeout) != std::future_status::ready) {
        return Unavailable("no connection to " + options_.host + ":" +
                           std::to_string(options_.port) + " within " +
                           std::to_string(options_.connect_timeout.count()) + " ms");
      }
      SKIFF_RETURN_IF_ERROR(f.get());
    }
    return Status::Ok();
  }

  void Call(const doc::Value& request, ReplyCallback done, internal::TextCallback text = nullptr) {
    if (!request.is_object()) {
      done(BadRequest("a request must be a JSON object"));
      return;
    }
    // The client owns ids: a caller's "id" would clash with the one added.
    const doc::Value* body = &request;
    doc::Value without_id;
    if (request.contains("id")) {
      without_id = request;
      without_id.erase("id");
      body = &without_id;
    }
    Pick().Submit(body->dump(-1, ' ', false, doc::Value::error_handler_t::replace), std::move(done),
                  std::move(text));
  }

  void Send(std::string body, ReplyCallback done, internal::TextCallback text) {
    Pick().Submit(std::move(body), std::move(done), std::move(text));
  }

  WireCounters wire_counters() const {
    WireCounters c;
    c.frames_sent = tally_.frames_sent.load(std::memory_order_relaxed);
    c.bytes_sent = tally_.bytes_sent.load(std::memory_order_relaxed);
    c.frames_received = tally_.frames_received.load(std::memory_order_relaxed);
    c.bytes_received = tally_.bytes_received.load(std::memory_order_relaxed);
    return c;
  }

  internal::WatchRegistry& watches() { return *watches_; }

  void Shutdown() {
    if (shut_down_.exchange(true)) return;
    for (auto& conn : conns_) conn->Shutdown();
    transport_->Shutdown();
  }

 private:
  internal::PooledConnection& Pick() {
    // Round robin over connections with room; otherwise the least loaded
    // open one; otherwise wherever the turn falls (it queues there).
    size_t n = conns_.size();
    size_t start = next_conn_.fetch_add(1, std::memory_order_relaxed) % n;
    internal::PooledConnection* best = nullptr;
    for (size_t i = 0; i < n; ++i) {
      internal::PooledConnection& c = *conns_[(start + i) % n];
      if (!c.ready()) continue;
      if (c.load() < options_.max_in_flight) return c;
      if (best == nullptr || c.load() < best->load()) best = &c;
    }
    return best != nullptr ? *best : *conns_[start];
  }

  void ScheduleSweep() {
    auto period = std::clamp<std::chrono::milliseconds>(
        options_.request_timeout / 4, std::chrono::milliseconds(5), std::chrono::milliseconds(100));
    transport_->After(period, [this] {
      if (shut_down_.load()) return;
      for (auto& conn : conns_) conn->ExpireOverdue();
      ScheduleSweep();
    });
  }

  const ClientOptions options_;
  SystemClock system_clock_;
  const Clock& clock_;
  internal::WireTally tally_;  // before transport_: its thread counts into it
  std::unique_ptr<internal::Transport> transport_;
  std::vector<std::shared_ptr<internal::PooledConnection>> conns_;  // fixed after Start
  std::shared_ptr<internal::WatchRegistry> watches_;                // on conns_[0]
  std::atomic<uint64_t> next_id_{1};
  std::atomic<size_t> next_conn_{0};
  std::atomic<bool> shut_down_{false};
};

namespace {

Status OkOnly(const Reply& reply) { return reply.ok() ? Status::Ok() : reply.status(); }

Result<bool> Found(const Reply& reply) {
  if (!reply.ok()) return reply.status();
  auto found = reply->find("found");
  if (found == reply->end() || !found->is_boolean()) return Internal("reply lacks 'found'");
  return found->get<bool>();
}

doc::Value TableKey(std::string_view op, std::string_view table, std::string_view key) {
  return {{"op", op}, {"table", table}, {"key", key}};
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  SKIFF_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

void Client::Call(const doc::Value& request, ReplyCallback done) {
  impl_->Call(request, std::move(done));
}

std::future<Reply> Client::Call(const doc::Value& request) {
  auto promise = std::make_shared<std::promise<Reply>>();
  std::future<Reply> future = promise->get_future();
  impl_->Call(request, [promise](Reply reply) { promise->set_value(std::move(reply)); });
  return future;
}

Reply Client::CallSync(const doc::Value& request) { return Call(request).get(); }

std::future<Result<std::string>> Client::CallText(const doc::Value& request) {
  auto promise = std::make_shared<std::promise<Result<std::string>>>();
  std::future<Result<std::string>> future = promise->get_future();
  CallText(request, [promise](Result<std::string> text) { promise->set_value(std::move(text)); });
  return future;
}

void Client::CallText(const doc::Value& request, std::function<void(Result<std::string>)> done) {
  auto shared = std::make_shared<std::function<void(Result<std::string>)>>(std::move(done));
  impl_->Call(
      request,
      [shared](Reply reply) {
        if (reply.ok()) {
          (*shared)(reply->dump(-1, ' ', false, doc::Value::error_handler_t::replace));
        } else {
          (*shared)(reply.status());
        }
      },
      [shared](std::string text) { (*shared)(std::move(text)); });
}

Result<std::string> Client::CallTextSync(const doc::Value& request) {
  return CallText(request).get();
}

Status Client::Ping() { return OkOnly(CallSync({{"op", "ping"}})); }

Result<doc::Value> Client::Echo(const doc::Value& data) {
  SKIFF_ASSIGN_OR_RETURN(doc::Value reply, CallSync({{"op", "echo"}, {"data", data}}));
  return reply.value("data", doc::Value());
}

Result<std::optional<doc::Value>> Client::Get(std::string_view table, std::string_view key) {
  Reply reply = CallSync(TableKey("get", table, key));
  SKIFF_ASSIGN_OR_RETURN(bool found, Found(reply));
  if (!found) return std::optional<doc::Value>();
  return std::optional<doc::Value>(reply->value("value", doc::Value()));
}

Result<bool> Client::Has(std::string_view table, std::string_view key) {
  return Found(CallSync(TableKey("has", table, key)));
}

Status Client::Set(std::string_view table, std::string_view key, const doc::Value& value) {
  doc::Value request = TableKey("set", table, key);
  request["value"] = value;
  return OkOnly(CallSync(request));
}

Result<bool> Client::Delete(std::string_view table, std::string_view key) {
  return Found(CallSync(TableKey("delete", table, key)));
}

Result<doc::Value> Client::Add(std::string_view table, std::string_view key,
                               const std::vector<std::string>& path, const doc::Value& delta) {
  doc::Value request = TableKey("add", table, key);
  request["path"] = path;
  request["delta"] = delta;
  SKIFF_ASSIGN_OR_RETURN(doc::Value reply, CallSync(request));
  return reply.value("value", doc::Value());
}

Status Client::Merge(std::string_view table, std::string_view key, const doc::Value& patch) {
  doc::Value request = TableKey("merge", table, key);
  request["patch"] = patch;
  return OkOnly(CallSync(request));
}

Result<Page> Client::All(std::string_view table, std::string_view after, size_t limit) {
  doc::Value request = {{"op", "all"}, {"table", table}};
  if (!after.empty()) request["after"] = after;
  if (limit > 0) request["limit"] = limit;
  SKIFF_ASSIGN_OR_RETURN(doc::Value reply, CallSync(request));
  Page page;
  auto items = reply.find("items");
  if (items == reply.end() || !items->is_array()) return Internal("reply lacks 'items'");
  for (auto& item : *items) {
    if (!item.is_object() || !item.contains("key") || !item["key"].is_string()) {
      return Internal("malformed item in 'all' reply");
    }
    page.items.push_back({item["key"].get<std::string>(), item.value("value", doc::Value())});
  }
  auto next = reply.find("next");
  if (next != reply.end() && next->is_string()) page.next = next->get<std::string>();
  return page;
}

Result<doc::Value> Client::Stats() { return CallSync({{"op", "stats"}}); }

Result<uint64_t> Client::Watch(std::string_view table, const WatchTarget& target,
                               WatchCallback on_event) {
  if (!target.key.empty() && !target.prefix.empty()) {
    return BadRequest("a watch takes a key or a prefix, not both");
  }
  return impl_->watches().Open(std::string(table), target, std::move(on_event));
}

Status Client::Unwatch(uint64_t handle) { return impl_->watches().Close(handle); }

void Client::Send(std::string body, ReplyCallback done, std::function<void(std::string)> text) {
  impl_->Send(std::move(body), std::move(done), std::move(text));
}

WireCounters Client::wire_counters() const { return impl_->wire_counters(); }

void Client::Shutdown() { impl_->Shutdown(); }

bool IsTransportFailure(const Status& status) {
  if (status.code() != StatusCode::kUnavailable) return false;
  // The messages the pool and its connections make (client.cc,
  // internal/pooled_connection.cc); a server's own messages never start so.
  for (std::string_view prefix : {"connection closed: ", "no reply within ",
                                  "the client is shut down", "no connection to "}) {
    if (status.message().starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace skiff::client
