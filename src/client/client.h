// Client: the C++ SDK of the Skiff v1 protocol.
//
// A pool of WebSocket connections, each pipelining up to max_in_flight
// requests; further requests wait in a queue. Every call has an asynchronous
// form (std::future or a callback) and a blocking form. Errors are Status
// values carrying the server's wire code and message (forbidden, ...);
// transport failures and timeouts are unavailable.
//
// Thread-safe: any thread may call any method. Callbacks run on the client's
// I/O thread and must not block; never wait on a future or call a blocking
// method from inside a callback.
#ifndef SKIFF_CLIENT_CLIENT_H_
#define SKIFF_CLIENT_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "client/client_options.h"
#include "client/sync_messages.h"
#include "doc/document.h"

namespace skiff::client {

using Reply = Result<doc::Value>;  // the reply object ({"id":..,"ok":true,...})
using ReplyCallback = std::function<void(Reply)>;

struct Item {
  std::string key;
  doc::Value value;
};

struct Page {
  std::vector<Item> items;
  std::optional<std::string> next;  // pass as `after`; nullopt on the last page
};

// Traffic of one Client since it connected: text frames and their payload
// bytes (WebSocket framing not included), login and reconnects included.
struct WireCounters {
  uint64_t frames_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t frames_received = 0;
  uint64_t bytes_received = 0;
};

// One event of a watch (docs/protocol.md, "watch / unwatch"). `kind` is
// "change" (key, value or deleted, version, coalesced), "initial" (key,
// value), "ready" (version), "resync" (version: read the values again),
// or "ended" (reason, message: the watch is over; after "overflow" the
// client watches again by itself, resuming from the last version).
struct WatchEvent {
  std::string kind;
  std::string key;
  std::optional<doc::Value> value;  // change (unless deleted) and initial
  bool deleted = false;
  bool coalesced = false;
  uint64_t version = 0;
  std::string reason;
  std::string message;
};
using WatchCallback = std::function<void(const WatchEvent&)>;

// What a watch follows in its table: one key, the keys with a prefix, or
// (both empty) the whole table; `initial` sends the current values first.
struct WatchTarget {
  std::string key;
  std::string prefix;
  bool initial = false;
};

// True when `status` is the client's own failure to get a reply (the
// connection closed or could not be made, no reply within the timeout, the
// client shut down), as opposed to an error the server replied with: the
// request may or may not have reached the server.
bool IsTransportFailure(const Status& status);

class Client {
 public:
  // Connects every pooled connection (and logs in when options.user is set).
  // unavailable when the server cannot be reached within connect_timeout or,
  // over TLS, its certificate fails a check (the message says which); the
  // server's error (unauthorized) when login fails.
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);

  ~Client();  // Shutdown()
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` (an object with "op" and its fields; the client sets
  // "id") and delivers the reply object or the error.
  void Call(const doc::Value& request, ReplyCallback done);
  std::future<Reply> Call(const doc::Value& request);
  // Blocking form of Call.
  Reply CallSync(const doc::Value& request);
  // Call for large replies that the caller reads itself: a successful reply
  // comes back as its JSON text, not parsed into a Value (a reply the server
  // did not write in its usual form is parsed and printed back).
  std::future<Result<std::string>> CallText(const doc::Value& request);
  Result<std::string> CallTextSync(const doc::Value& request);
  // The callback form: `done` runs on the client's I/O thread as the reply
  // arrives, so the replies behind it wait for it.
  void CallText(const doc::Value& request, std::function<void(Result<std::string>)> done);

  // Blocking conveniences, one per op.
  Status Ping();
  Result<doc::Value> Echo(const doc::Value& data);
  Result<std::optional<doc::Value>> Get(std::string_view table, std::string_view key);
  Result<bool> Has(std::string_view table, std::string_view key);
  Status Set(std::string_view table, std::string_view key, const doc::Value& value);
  // Whether the key existed.
  Result<bool> Delete(std::string_view table, std::string_view key);
  // The new number.
  Result<doc::Value> Add(std::string_view table, std::string_view key,
                         const std::vector<std::string>& path, const doc::Value& delta);
  Status Merge(std::string_view table, std::string_view key, const doc::Value& patch);
  // limit 0 = the server's default.
  Result<Page> All(std::string_view table, std::string_view after = {}, size_t limit = 0);
  Result<doc::Value> Stats();

  // The sync ops (docs/protocol.md), written and read by sync_messages.h.
  // The blocking forms return the reply, the server's error (forbidden,
  // bad_request, ...) or unavailable, and internal for a reply not of the
  // op's form. The callback forms run `done` on the client's I/O thread.
  Result<PushReply> Push(const PushRequest& request);
  void Push(const PushRequest& request, std::function<void(Result<PushReply>)> done);
  Result<PullReply> Pull(const PullRequest& request);
  void Pull(const PullRequest& request, std::function<void(Result<PullReply>)> done);
  Result<BootstrapPage> Bootstrap(const BootstrapRequest& request);
  // `on_next` runs on the I/O thread, before `done`, with the page's `next`
  // as soon as the reply names it, so the caller can ask for the following
  // page while this one's rows are read (a device does).
  void Bootstrap(const BootstrapRequest& request, std::function<void(Result<BootstrapPage>)> done,
                 OnNextPage on_next = {});
  Result<WaitReply> Wait(const WaitRequest& request);
  void Wait(const WaitRequest& request, std::function<void(Result<WaitReply>)> done);

  // Watches `table` (see WatchTarget) on the client's first connection;
  // `on_event` runs on the client's I/O thread for every event, in order.
  // After a reconnect (or an overflow) the watch is opened again by itself
  // with `since` the last version seen, so changes missed meanwhile come
  // first, or a "resync" event says to read again. Returns a handle for
  // Unwatch, or the server's error (forbidden, bad_request, ...).
  Result<uint64_t> Watch(std::string_view table, const WatchTarget& target, WatchCallback on_event);
  // Ends a watch: no event of it runs after this returns OK.
  Status Unwatch(uint64_t handle);

  WireCounters wire_counters() const;

  // Fails everything pending and closes the connections. Idempotent.
  void Shutdown();

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  // Sends a request's JSON text without "id"; `text`, when set, takes a
  // successful reply in its usual form unparsed (see CallText).
  void Send(std::string body, ReplyCallback done, std::function<void(std::string)> text = nullptr);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skiff::client

#endif  // SKIFF_CLIENT_CLIENT_H_
