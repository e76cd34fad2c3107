#include "client/device.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "base/mutex.h"
#include "client/client.h"
#include "client/internal/bootstrap_feed.h"
#include "client/internal/bootstrap_page.h"
#include "client/internal/row_table.h"
#include "doc/document.h"
#include "doc/names.h"

namespace skiff::client {
namespace {

Status ValidateName(const RowName& name) {
  SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(name.group));
  SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(name.table));
  return doc::ValidateKey(name.key);
}

// Errors a retry cannot fix: the entries that caused them are dropped.
bool IsFinal(const Status& s) {
  return s.code() == StatusCode::kForbidden || s.code() == StatusCode::kBadRequest ||
         s.code() == StatusCode::kTooLarge;
}

Result<const doc::Value*> Member(const doc::Value& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return Internal(std::string("reply lacks '") + name + "'");
  return &*it;
}

Result<uint64_t> Unsigned(const doc::Value& obj, const char* name) {
  SKIFF_ASSIGN_OR_RETURN(const doc::Value* v, Member(obj, name));
  if (!v->is_number_unsigned()) return Internal(std::string("'") + name + "' is not a number");
  return v->get<uint64_t>();
}

Result<RowName> NameOf(const doc::Value& row) {
  if (!row.is_object()) return Internal("malformed row in reply");
  auto g = row.find("group"), t = row.find("table"), k = row.find("key");
  if (g == row.end() || t == row.end() || k == row.end() || !g->is_string() || !t->is_string() ||
      !k->is_string()) {
    return Internal("malformed row in reply");
  }
  return RowName{g->get<std::string>(), t->get<std::string>(), k->get<std::string>()};
}

void Add(DeviceCounters& into, const WireCounters& wire) {
  into.frames_sent += wire.frames_sent;
  into.bytes_sent += wire.bytes_sent;
  into.frames_received += wire.frames_received;
  into.bytes_received += wire.bytes_received;
}

void Add(WireCounters& into, const WireCounters& wire) {
  into.frames_sent += wire.frames_sent;
  into.bytes_sent += wire.bytes_sent;
  into.frames_received += wire.frames_received;
  into.bytes_received += wire.bytes_received;
}

}  // namespace

const char* SyncStateName(SyncState state) {
  switch (state) {
    case SyncState::kOffline:
      return "offline";
    case SyncState::kSyncing:
      return "syncing";
    case SyncState::kOnline:
      return "online";
  }
  return "?";
}

// The reply of a wait in flight.
struct WaitSlot {
  bool done = false;
  std::optional<Result<doc::Value>> reply;
};

class Device::Impl {
 public:
  Impl(const DeviceOptions& options, DeviceStorage& storage)
      : options_(options), storage_(storage) {}

  ~Impl() { Close(); }

  Status Load() {
    SKIFF_ASSIGN_OR_RETURN(StoredState state, storage_.Load());
    MutexLock lock(&mu_);
    size_t bytes = 0;
    for (const StoredRow& row : state.rows) bytes += row.name.key.size() + row.value.size();
    rows_.Reserve(state.rows.size(), bytes);
    for (const StoredRow& row : state.rows) rows_.Put(row.name, row.value);
    rows_.ShrinkToFit();
    for (OutboxEntry& e : state.outbox) {
      ++pending_[e.name];
      outbox_.push_back(std::move(e));
    }
    position_ = state.position;
    last_seq_ = std::max(state.last_seq, outbox_.empty() ? 0 : outbox_.back().seq);
    return Status::Ok();
  }

  void StartLoop() {
    if (options_.sync) loop_ = std::thread([this] { Loop(); });
  }

  void Close() {
    std::shared_ptr<Client> client;
    {
      MutexLock lock(&mu_);
      if (stopping_ && !loop_.joinable()) return;
      stopping_ = true;
      client = client_;
    }
    cv_.SignalAll();
    // A request in flight (a pull from a server that stopped answering)
    // fails now instead of at its timeout. Outside the lock: the failed
    // requests' callbacks take it.
    if (client) client->Shutdown();
    if (loop_.joinable()) loop_.join();
  }

  std::optional<std::string> Get(const RowName& name) const {
    MutexLock lock(&mu_);
    return rows_.Get(name);
  }

  std::vector<StoredRow> Scan(std::string_view group, std::string_view table) const {
    MutexLock lock(&mu_);
    return rows_.Scan(group, table);
  }

  size_t row_count() const {
    MutexLock lock(&mu_);
    return rows_.size();
  }

  Status Write(const RowName& name, std::optional<std::string> value) {
    SKIFF_RETURN_IF_ERROR(ValidateName(name));
    {
      MutexLock lock(&mu_);
      OutboxEntry entry{last_seq_ + 1, name, std::move(value)};
      SKIFF_RETURN_IF_ERROR(storage_.WriteLocal(entry));
      last_seq_ = entry.seq;
      if (entry.value) {
        rows_.Put(name, *entry.value);
      } else {
        rows_.Erase(name);
      }
      ++pending_[name];
      outbox_.push_back(std::move(entry));
      poked_ = true;
    }
    cv_.SignalAll();
    return Status::Ok();
  }

  SyncState state() const {
    MutexLock lock(&mu_);
    return state_;
  }
  size_t outbox_size() const {
    MutexLock lock(&mu_);
    return outbox_.size();
  }
  uint64_t cursor() const {
    MutexLock lock(&mu_);
    return position_.cursor;
  }
  Status last_error() const {
    MutexLock lock(&mu_);
    return last_error_;
  }
  DeviceCounters counters() const {
    MutexLock lock(&mu_);
    return CountersLocked();
  }
  DeviceCounters synced_counters() const {
    MutexLock lock(&mu_);
    return synced_counters_;
  }

  Status WaitUntilSynced(std::chrono::milliseconds timeout) {
    MutexLock lock(&mu_);
    if (!options_.sync) return BadRequest("this device was opened without sync");
    const uint64_t target = rounds_started_ + 1;
    poked_ = true;
    cv_.SignalAll();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (synced_round_ < target && !stopping_ && cv_.WaitUntil(mu_, deadline)) {
    }
    if (synced_round_ >= target) return Status::Ok();
    return Unavailable("not synced within " + std::to_string(timeout.count()) +
                       " ms; last error: " + last_error_.ToString());
  }

  Status WaitUntilUpToDate(std::chrono::milliseconds timeout) {
    MutexLock lock(&mu_);
    if (!options_.sync) return BadRequest("this device was opened without sync");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (synced_round_ < 1 && !stopping_ && cv_.WaitUntil(mu_, deadline)) {
    }
    if (synced_round_ >= 1) return Status::Ok();
    return Unavailable("not up to date within " + std::to_string(timeout.count()) +
                       " ms; last error: " + last_error_.ToString());
  }

 private:
  DeviceCounters CountersLocked() const SKIFF_REQUIRES(mu_) {
    DeviceCounters c = counters_;
    Add(c, wire_done_);
    if (client_) Add(c, client_->wire_counters());
    return c;
  }

  // The sync loop: rounds of push and pull, a held wait between rounds,
  // exponential back-off after errors.
  void Loop() {
    std::chrono::milliseconds backoff = options_.backoff_min;
    for (;;) {
      {
        MutexLock lock(&mu_);
        if (stopping_) break;
        poked_ = false;
        round_ = ++rounds_started_;
      }
      Status s = Round();
      if (s.ok()) {
        backoff = options_.backoff_min;
        s = Idle();
      }
      if (!s.ok()) {
        const bool lost = s.code() == StatusCode::kUnavailable;
        {
          MutexLock lock(&mu_);
          last_error_ = s;
          if (lost || !client_) state_ = SyncState::kOffline;
        }
        if (lost) DropClient();
        MutexLock lock(&mu_);
        const auto deadline = std::chrono::steady_clock::now() + backoff;
        while (!stopping_ && cv_.WaitUntil(mu_, deadline)) {
        }
        backoff = std::min(backoff * 2, options_.backoff_max);
      }
    }
    DropClient();
    MutexLock lock(&mu_);
    state_ = SyncState::kOffline;
  }

  void DropClient() {
    std::shared_ptr<Client> client;
    {
      MutexLock lock(&mu_);
      if (!client_) return;
      Add(wire_done_, client_->wire_counters());
      client = std::move(client_);
      wait_slot_.reset();  // the client's end fails it
    }
    client.reset();  // fails what is pending (a held wait) on this thread
  }

  Status Connect() {
    ClientOptions o;
    o.host = options_.host;
    o.port = options_.port;
    o.user = options_.user;
    o.secret = options_.secret;
    o.reconnect = false;  // the loop reconnects, with back-off
    o.connect_timeout = options_.request_timeout;
    o.request_timeout = options_.wait_timeout + options_.request_timeout;
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(o));
    MutexLock lock(&mu_);
    client_ = std::move(client);
    ++counters_.connects;
    return Status::Ok();
  }

  // One request; counts it. Runs on the loop thread, which alone replaces
  // client_, so the pointer is stable here.
  Result<doc::Value> Call(const doc::Value& request, uint64_t DeviceCounters::*op) {
    CountRequest(op);
    return client_->CallSync(request);
  }
  void CountRequest(uint64_t DeviceCounters::*op) {
    MutexLock lock(&mu_);
    ++counters_.requests;
    ++(counters_.*op);
  }

  Status Round() {
    if (!client_) SKIFF_RETURN_IF_ERROR(Connect());
    {
      MutexLock lock(&mu_);
      state_ = SyncState::kSyncing;
    }
    SKIFF_RETURN_IF_ERROR(BootstrapAll());
    SKIFF_RETURN_IF_ERROR(PushAll());
    return PullAll();
  }

  // Up to date: publish it, then hold a wait unless there is work already.
  Status Idle() {
    uint64_t since;
    {
      MutexLock lock(&mu_);
      if (!outbox_.empty()) return Status::Ok();  // written meanwhile: go again
      last_error_ = Status::Ok();
      state_ = SyncState::kOnline;
      synced_round_ = round_;
      synced_counters_ = CountersLocked();
      if (poked_ || stopping_) {
        cv_.SignalAll();
        return Status::Ok();
      }
      since = position_.cursor;
    }
    cv_.SignalAll();
    return HoldWait(since);
  }

  // Holds a wait until it answers, a local write or sync request pokes the
  // loop, or Close. A wait left behind by a poke stays in flight and is
  // reused by the next hold instead of opening another, so a device never
  // has more than one: its older `since` is still correct, because anything
  // past it that the loop already pulled would have answered it.
  Status HoldWait(uint64_t since) {
    std::shared_ptr<WaitSlot> slot;
    {
      MutexLock lock(&mu_);
      slot = wait_slot_;
    }
    if (!slot) {
      slot = std::make_shared<WaitSlot>();
      {
        MutexLock lock(&mu_);
        ++counters_.requests;
        ++counters_.waits;
        wait_slot_ = slot;
      }
      client_->Call(
          {{"op", "wait"}, {"since", since}, {"timeout_ms", options_.wait_timeout.count()}},
          [this, slot](Result<doc::Value> reply) {
            {
              MutexLock lock(&mu_);
              slot->done = true;
              slot->reply = std::move(reply);
            }
            cv_.SignalAll();
          });
    }
    MutexLock lock(&mu_);
    while (!slot->done && !poked_ && !stopping_) cv_.Wait(mu_);
    if (!slot->done) return Status::Ok();
    wait_slot_.reset();
    return slot->reply->ok() ? Status::Ok() : slot->reply->status();
  }

  // Pages are asked for one ahead: as soon as a reply names the page after
  // it (the server writes that before the rows), the client's I/O thread
  // asks for that page, then reads this one's rows, while this thread
  // applies the page before (bootstrap_feed.h). So the server's reading and
  // sending, the client's reading and this thread's applying overlap.
  Status BootstrapAll() {
    std::optional<RowName> after;
    {
      MutexLock lock(&mu_);
      if (position_.bootstrapped) return Status::Ok();
      after = position_.bootstrap_after;
    }
    auto feed = std::make_shared<internal::BootstrapFeed>();
    // Runs before this returns, so no ask of the I/O thread is under way
    // once the loop may replace the client; the I/O thread's asks are
    // counted then.
    struct CloseFeed {
      Impl& device;
      internal::BootstrapFeed& feed;
      ~CloseFeed() {
        const uint64_t asked = feed.Close();
        MutexLock lock(&device.mu_);
        device.counters_.requests += asked;
        device.counters_.bootstraps += asked;
      }
    } close_feed{*this, *feed};
    CountRequest(&DeviceCounters::bootstraps);
    AskForPage(client_.get(), options_.page, after, feed);
    for (;;) {
      internal::BootstrapFeed::Entry entry = feed->Pop();
      SKIFF_ASSIGN_OR_RETURN(internal::BootstrapPage page, std::move(entry.page));
      if (!entry.next_asked && page.next) {
        CountRequest(&DeviceCounters::bootstraps);
        AskForPage(client_.get(), options_.page, page.next, feed);
      }
      std::vector<RowWrite>& writes = page.rows;
      MutexLock lock(&mu_);
      SyncPosition position = position_;
      // The first page's cursor is where pulling starts once all is in.
      if (!position.bootstrap_after) position.bootstrap_cursor = page.cursor;
      position.bootstrap_after = page.next;
      if (!page.next) {
        position.bootstrapped = true;
        position.cursor = position.bootstrap_cursor;
      }
      counters_.rows_received += writes.size();
      SKIFF_RETURN_IF_ERROR(ApplyLocked(std::move(writes), position));
      if (!page.next) return Status::Ok();
    }
  }

  // Asks for the bootstrap page after `after` (the first page: nullopt);
  // the reply is read into rows on the client's I/O thread and pushed to
  // `feed`. Reading a reply that names its next page first, that thread
  // asks for the next page before it reads the rows, when the feed allows.
  // Static: it runs on the I/O thread and touches no member of the device.
  static void AskForPage(Client* client, size_t limit, const std::optional<RowName>& after,
                         const std::shared_ptr<internal::BootstrapFeed>& feed) {
    doc::Value request = {{"op", "bootstrap"}, {"limit", limit}};
    if (after) request["after"] = {after->group, after->table, after->key};
    const uint64_t number = feed->Ask();
    client->CallText(request, [client, limit, feed, number](Result<std::string> text) {
      if (!text.ok()) return feed->Push(number, text.status(), false);
      bool next_asked = false;
      Result<internal::BootstrapPage> page =
          internal::ReadBootstrapPage(*text, [&](const std::optional<RowName>& next) {
            if (!next || !feed->BeginAskAhead()) return;
            struct EndAsk {
              internal::BootstrapFeed& feed;
              ~EndAsk() { feed.EndAskAhead(); }
            } end_ask{*feed};
            AskForPage(client, limit, next, feed);
            next_asked = true;
          });
      feed->Push(number, std::move(page), next_asked);
    });
  }

  Status PullAll() {
    for (;;) {
      uint64_t since;
      {
        MutexLock lock(&mu_);
        since = position_.cursor;
      }
      SKIFF_ASSIGN_OR_RETURN(doc::Value reply,
                             Call({{"op", "pull"}, {"since", since}, {"limit", options_.page}},
                                  &DeviceCounters::pulls));
      SKIFF_ASSIGN_OR_RETURN(const doc::Value* changes, Member(reply, "changes"));
      SKIFF_ASSIGN_OR_RETURN(uint64_t next_cursor, Unsigned(reply, "cursor"));
      std::vector<RowWrite> writes;
      writes.reserve(changes->size());
      for (const doc::Value& c : *changes) {
        SKIFF_ASSIGN_OR_RETURN(RowName name, NameOf(c));
        auto value = c.find("value");
        std::optional<std::string> text;
        if (value != c.end() && !value->is_null()) text = value->dump();
        writes.push_back({std::move(name), std::move(text)});
      }
      const bool more = reply.value("more", false);
      MutexLock lock(&mu_);
      SyncPosition position = position_;
      position.cursor = next_cursor;
      counters_.changes_received += writes.size();
      SKIFF_RETURN_IF_ERROR(ApplyLocked(std::move(writes), position));
      if (!more) return Status::Ok();
    }
  }

  // Applies server rows under the pending outbox: a row with a local write
  // in flight keeps the local value (the outbox is re-applied on top).
  Status ApplyLocked(std::vector<RowWrite> writes, const SyncPosition& position)
      SKIFF_REQUIRES(mu_) {
    std::erase_if(
        writes, [&](const RowWrite& w) SKIFF_REQUIRES(mu_) { return pending_.count(w.name) > 0; });
    SKIFF_RETURN_IF_ERROR(storage_.ApplyRemote(writes, position));
    for (const RowWrite& w : writes) {
      if (w.value) {
        rows_.Put(w.name, *w.value);
      } else {
        rows_.Erase(w.name);
      }
    }
    position_ = position;
    return Status::Ok();
  }

  Status PushAll() {
    for (;;) {
      doc::Value changes = doc::Value::array();
      uint64_t batch_last = 0;
      {
        MutexLock lock(&mu_);
        if (outbox_.empty()) {
          push_limit_ = options_.max_push;
          return Status::Ok();
        }
        const size_t n = std::min(outbox_.size(), std::max<size_t>(1, push_limit_));
        for (size_t i = 0; i < n; ++i) {
          const OutboxEntry& e = outbox_[i];
          doc::Value value;
          if (e.value) {
            SKIFF_ASSIGN_OR_RETURN(value, doc::Parse(*e.value, doc::kNoLimits));
          }
          changes.push_back({{"seq", e.seq},
                             {"table", e.name.table},
                             {"key", e.name.key},
                             {"group", e.name.group},
                             {"value", std::move(value)}});
          batch_last = e.seq;
        }
      }
      const size_t sent = changes.size();
      Result<doc::Value> reply =
          Call({{"op", "push"}, {"device", options_.device_id}, {"changes", std::move(changes)}},
               &DeviceCounters::pushes);
      uint64_t acked;
      if (reply.ok()) {
        SKIFF_ASSIGN_OR_RETURN(uint64_t last_seq, Unsigned(*reply, "last_seq"));
        acked = last_seq;
      } else if (IsFinal(reply.status()) && sent > 1) {
        // Find the refused entry: push one at a time until past it.
        MutexLock lock(&mu_);
        push_limit_ = 1;
        continue;
      } else if (IsFinal(reply.status())) {
        acked = batch_last;
        MutexLock lock(&mu_);
        ++counters_.rejected;
        last_error_ = reply.status();
      } else {
        return reply.status();
      }
      MutexLock lock(&mu_);
      SKIFF_RETURN_IF_ERROR(storage_.Acknowledge(acked));
      while (!outbox_.empty() && outbox_.front().seq <= acked) {
        auto p = pending_.find(outbox_.front().name);
        if (p != pending_.end() && --p->second == 0) pending_.erase(p);
        if (reply.ok()) ++counters_.changes_pushed;
        outbox_.pop_front();
      }
    }
  }

  const DeviceOptions options_;
  DeviceStorage& storage_;

  mutable Mutex mu_;
  CondVar cv_;
  internal::RowTable rows_ SKIFF_GUARDED_BY(mu_);
  std::deque<OutboxEntry> outbox_ SKIFF_GUARDED_BY(mu_);
  std::map<RowName, size_t> pending_ SKIFF_GUARDED_BY(mu_);  // outbox entries per row
  SyncPosition position_ SKIFF_GUARDED_BY(mu_);
  uint64_t last_seq_ SKIFF_GUARDED_BY(mu_) = 0;
  SyncState state_ SKIFF_GUARDED_BY(mu_) = SyncState::kOffline;
  Status last_error_ SKIFF_GUARDED_BY(mu_);
  DeviceCounters counters_ SKIFF_GUARDED_BY(mu_);
  DeviceCounters synced_counters_ SKIFF_GUARDED_BY(mu_);
  WireCounters wire_done_ SKIFF_GUARDED_BY(mu_);  // of clients dropped
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  bool poked_ SKIFF_GUARDED_BY(mu_) = false;  // a write or a sync request
  uint64_t rounds_started_ SKIFF_GUARDED_BY(mu_) = 0;
  uint64_t round_ SKIFF_GUARDED_BY(mu_) = 0;         // the current round
  uint64_t synced_round_ SKIFF_GUARDED_BY(mu_) = 0;  // last round that got up to date
  size_t push_limit_ SKIFF_GUARDED_BY(mu_) = 0;
  std::shared_ptr<WaitSlot> wait_slot_ SKIFF_GUARDED_BY(mu_);  // the wait in flight
  // Written by the loop thread under mu_; the loop reads it without the lock.
  // Shared so Close can shut it down (failing a request in flight at once)
  // while the loop thread may be dropping it.
  std::shared_ptr<Client> client_;
  std::thread loop_;
};

Result<std::unique_ptr<Device>> Device::Open(const DeviceOptions& options, DeviceStorage& storage) {
  if (options.sync && options.device_id.empty()) return BadRequest("a device needs an id");
  if (options.page == 0 || options.max_push == 0) {
    return BadRequest("page and max_push must be at least 1");
  }
  auto impl = std::make_unique<Impl>(options, storage);
  SKIFF_RETURN_IF_ERROR(impl->Load());
  impl->StartLoop();
  return std::unique_ptr<Device>(new Device(std::move(impl)));
}

Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Device::~Device() = default;
void Device::Close() { impl_->Close(); }
std::optional<std::string> Device::Get(const RowName& name) const { return impl_->Get(name); }
std::vector<StoredRow> Device::Scan(std::string_view group, std::string_view table) const {
  return impl_->Scan(group, table);
}
size_t Device::row_count() const { return impl_->row_count(); }
Status Device::Put(const RowName& name, const doc::Value& value) {
  return impl_->Write(name, value.dump());
}
Status Device::Delete(const RowName& name) { return impl_->Write(name, std::nullopt); }
SyncState Device::state() const { return impl_->state(); }
size_t Device::outbox_size() const { return impl_->outbox_size(); }
uint64_t Device::cursor() const { return impl_->cursor(); }
Status Device::last_error() const { return impl_->last_error(); }
DeviceCounters Device::counters() const { return impl_->counters(); }
DeviceCounters Device::synced_counters() const { return impl_->synced_counters(); }
Status Device::WaitUntilSynced(std::chrono::milliseconds timeout) {
  return impl_->WaitUntilSynced(timeout);
}
Status Device::WaitUntilUpToDate(std::chrono::milliseconds timeout) {
  return impl_->WaitUntilUpToDate(timeout);
}

}  // namespace skiff::client
