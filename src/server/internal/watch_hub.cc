#include "server/internal/watch_hub.h"

#include <algorithm>
#include <chrono>

#include "server/internal/wire/watch_events.h"

namespace skiff::server::internal {
namespace {

// How soon a connection whose socket was full is offered its queue again.
constexpr std::chrono::milliseconds kRetryAfter{10};

bool KeyMatches(WatchFilter::Kind kind, std::string_view text, std::string_view key) {
  switch (kind) {
    case WatchFilter::Kind::kKey:
      return key == text;
    case WatchFilter::Kind::kPrefix:
      return key.starts_with(text);
    case WatchFilter::Kind::kTable:
      return true;
  }
  return false;
}

}  // namespace

bool WatchFilter::Matches(std::string_view key) const { return KeyMatches(kind, text, key); }

bool WatchHub::Watch::Matches(std::string_view key) const { return KeyMatches(kind, text, key); }

WatchHub::Watch* WatchHub::Sub::Find(uint64_t id) {
  if (id == 0) return nullptr;
  if (first.id == id) return &first;
  if (more) {
    for (const std::unique_ptr<Watch>& w : *more) {
      if (w->id == id) return w.get();
    }
  }
  return nullptr;
}

size_t WatchHub::Sub::watch_count() const {
  return (first.id != 0 ? 1 : 0) + (more ? more->size() : 0);
}

WatchHub::Watch* WatchHub::Sub::AnyWatch() {
  if (first.id != 0) return &first;
  return more && !more->empty() ? more->front().get() : nullptr;
}

WatchHub::Watch& WatchHub::Sub::AddWatch() {
  if (first.id == 0) return first;
  if (!more) more = std::make_unique<std::vector<std::unique_ptr<Watch>>>();
  return *more->emplace_back(std::make_unique<Watch>());
}

void WatchHub::Sub::RemoveWatch(uint64_t id) {
  if (first.id == id) {
    first = Watch{};
    return;
  }
  if (!more) return;
  std::erase_if(*more, [id](const std::unique_ptr<Watch>& w) { return w->id == id; });
  if (more->empty()) more.reset();
}

bool WatchHub::Records(std::string_view table) const {
  // The common case, a server nobody watches, costs one load.
  if (!any_recorded_.load(std::memory_order_acquire)) return false;
  MutexLock lock(&mu_);
  return recorded_.find(std::string(table)) != recorded_.end();
}

bool WatchHub::Record(const std::string& table) {
  MutexLock lock(&mu_);
  const bool added = recorded_.emplace(table, version_).second;
  any_recorded_.store(true, std::memory_order_release);
  return added;
}

void WatchHub::RecordedFrom(const std::string& table) {
  MutexLock lock(&mu_);
  recorded_[table] = version_;
}

std::string WatchHub::ChangeSlot(uint64_t watch, std::string_view key) {
  std::string slot = std::to_string(watch);
  slot += '\0';
  slot += key;
  return slot;
}

void WatchHub::Publish(std::string_view table, std::string_view key,
                       std::optional<std::string_view> value) {
  MutexLock lock(&mu_);
  PublishAt(version_ + 1, table, key, value);
}

void WatchHub::FeedFrom(uint64_t version, const std::vector<std::string>& tables) {
  MutexLock lock(&mu_);
  version_ = dropped_through_ = version;
  history_.clear();
  history_bytes_ = 0;
  for (const std::string& table : tables) recorded_.emplace(table, version);
  for (auto& [table, watches] : by_table_) {
    for (Watch* w : watches) {
      ++counts_.resyncs;
      QueueFrame(*w->sub, w->id, EncodeResyncEvent(w->id, version));
    }
  }
}

void WatchHub::FeedRecorded(const std::string& table, uint64_t version) {
  MutexLock lock(&mu_);
  recorded_.emplace(table, version);
  version_ = std::max(version_, version);
}

void WatchHub::FeedChange(uint64_t version, std::string_view table, std::string_view key,
                          std::optional<std::string_view> value) {
  MutexLock lock(&mu_);
  PublishAt(version, table, key, value);
}

void WatchHub::PublishAt(uint64_t version, std::string_view table, std::string_view key,
                         std::optional<std::string_view> value) {
  version_ = version;
  auto body = std::make_shared<const std::string>(EncodeChangeBody(table, key, value, version));
  history_.push_back(Change{version, std::string(table), std::string(key), body});
  history_bytes_ += body->size();
  while (!history_.empty() &&
         (history_.size() > options_.history_count || history_bytes_ > options_.history_bytes)) {
    history_bytes_ -= history_.front().body->size();
    dropped_through_ = history_.front().version;
    history_.pop_front();
  }
  auto it = by_table_.find(std::string(table));
  if (it == by_table_.end()) return;
  // A copy: QueueChange may end a watch, which edits the list.
  const std::vector<Watch*> watches = it->second;
  for (Watch* w : watches) {
    if (w->Matches(key)) QueueChange(*w, body, key);
  }
}

void WatchHub::QueueChange(Watch& w, const std::shared_ptr<const std::string>& body,
                           std::string_view key) {
  // A coalesced change leaves its old place and joins the end, so a
  // connection still gets versions in increasing order.
  bool coalesced = false;
  if (w.held) {
    // Waiting for the initial values: one change per key is enough, since
    // the client reads the latest value of each anyway.
    Held& held = held_[w.id];
    for (auto it = held.items.begin(); it != held.items.end(); ++it) {
      if (it->key != key) continue;
      held.bytes -= it->bytes();
      held.items.erase(it);
      coalesced = true;
      ++counts_.coalesced;
      break;
    }
    Item item{w.id, EncodeChangeHead(w.id, coalesced), body, std::string(key)};
    held.bytes += item.bytes();
    held.items.push_back(std::move(item));
    if (held.bytes > options_.max_queue_bytes) {
      ++counts_.overflows;
      End(w, "overflow", "more changes waited than the connection's queue holds; read again");
    }
    return;
  }
  Sub& sub = *w.sub;
  Backlog& b = sub.backlog_made();
  if (b.bytes > options_.coalesce_bytes) {
    if (!b.last_change) IndexChanges(b);
    auto last = b.last_change->find(ChangeSlot(w.id, key));
    if (last != b.last_change->end()) {
      Item& old = b.queue[last->second - b.popped];
      b.bytes -= old.bytes();
      old = Item{};  // a hole, skipped when delivered
      ++b.holes;
      b.last_change->erase(last);
      coalesced = true;
      ++counts_.coalesced;
    }
  }
  Item item{w.id, EncodeChangeHead(w.id, coalesced), body, std::string(key)};
  const size_t bytes = item.bytes();
  if (b.bytes + bytes > options_.max_queue_bytes) {
    ++counts_.overflows;
    End(w, "overflow", "the client reads changes slower than they come; read again");
    return;
  }
  if (b.last_change) (*b.last_change)[ChangeSlot(w.id, key)] = b.popped + b.queue.size();
  b.queue.push_back(std::move(item));
  b.bytes += bytes;
  if (b.holes > 64 && b.holes > b.queue.size() / 2) Compact(b, 0);
  MarkDirty(sub);
}

void WatchHub::Compact(Backlog& b, uint64_t drop_watch) {
  ItemQueue kept;
  for (Item& item : b.queue) {
    if (item.head.empty()) continue;  // a hole
    if (drop_watch != 0 && item.watch == drop_watch) {
      b.bytes -= item.bytes();
      continue;
    }
    kept.push_back(std::move(item));
  }
  b.queue.swap(kept);
  b.holes = 0;
  if (b.last_change) IndexChanges(b);
}

void WatchHub::IndexChanges(Backlog& b) {
  if (!b.last_change) b.last_change = std::make_unique<std::unordered_map<std::string, uint64_t>>();
  b.last_change->clear();
  // Later items overwrite earlier ones: each slot points at its newest.
  for (size_t i = 0; i < b.queue.size(); ++i) {
    if (b.queue[i].body) {
      (*b.last_change)[ChangeSlot(b.queue[i].watch, b.queue[i].key)] = b.popped + i;
    }
  }
}

void WatchHub::QueueFrame(Sub& sub, uint64_t watch, std::string frame) {
  Backlog& b = sub.backlog_made();
  b.bytes += frame.size();
  b.queue.push_back(Item{watch, std::move(frame), nullptr, {}});
  MarkDirty(sub);
}

void WatchHub::MarkDirty(Sub& sub) {
  if (sub.dirty) return;
  sub.dirty = true;
  dirty_.push_back(&sub);
}

void WatchHub::End(Watch& w, std::string_view reason, std::string_view message) {
  Sub& sub = *w.sub;
  const uint64_t id = w.id;
  if (sub.backlog) Compact(*sub.backlog, id);  // its queued frames go
  if (w.held) held_.erase(id);
  if (auto list = by_table_.find(*w.table); list != by_table_.end()) {
    std::erase(list->second, &w);
    if (list->second.empty()) by_table_.erase(list);
  }
  --open_;
  if (!reason.empty()) QueueFrame(sub, id, EncodeEndedEvent(id, reason, message));
  sub.RemoveWatch(id);  // w is gone
}

WatchHub::Sub* WatchHub::SubOf(const Connection& conn) {
  return conn.watch_sub == 0 ? nullptr : &SubAt(conn.watch_sub - 1);
}

WatchHub::Sub& WatchHub::NewSub(const std::shared_ptr<Connection>& conn) {
  uint32_t slot;
  if (!free_subs_.empty()) {
    slot = free_subs_.back();
    free_subs_.pop_back();
  } else {
    if (subs_made_ == sub_blocks_.size() * kSubsPerBlock) {
      sub_blocks_.push_back(std::make_unique<Sub[]>(kSubsPerBlock));
    }
    slot = static_cast<uint32_t>(subs_made_++);
  }
  Sub& sub = SubAt(slot);
  sub.conn = conn;
  conn->watch_sub = slot + 1;
  return sub;
}

Result<WatchHub::Opened> WatchHub::Open(const std::shared_ptr<Connection>& conn,
                                        uint64_t request_id, WatchFilter filter, uint64_t since,
                                        bool hold) {
  MutexLock lock(&mu_);
  if (conn->watches_closed) return Unavailable("the connection is closing");
  Sub* sub = SubOf(*conn);
  if (sub != nullptr && sub->watch_count() >= options_.max_per_connection) {
    ++counts_.refused;
    return BadRequest("this connection holds its most watches (" +
                      std::to_string(options_.max_per_connection) + "); unwatch one first");
  }
  if (open_ >= options_.max_total) {
    ++counts_.refused;
    return Unavailable("the server holds its most watches (" + std::to_string(options_.max_total) +
                       "); try again later");
  }
  auto recorded = recorded_.find(filter.table);
  if (recorded == recorded_.end()) return Internal("a watch on a table not recorded");
  if (sub == nullptr) {
    sub = &NewSub(conn);
  }
  Watch* w = &sub->AddWatch();
  w->id = ++next_watch_;
  w->table = &recorded->first;
  w->text = std::move(filter.text);
  w->kind = filter.kind;
  w->sub = sub;
  w->held = hold;
  by_table_[*w->table].push_back(w);
  ++open_;
  ++counts_.opened;
  const Opened opened{w->id, version_};
  // Numbered 0, not the watch's: the reply stays if the watch ends at once.
  QueueFrame(*sub, 0, EncodeWatchReply(request_id, w->id, version_));
  if (since != 0) {
    // Held only if nothing after `since` was let go, or happened before the
    // table was recorded, or in another run of the server.
    const uint64_t from = recorded->second;
    if (since > version_ || since < from || since < dropped_through_) {
      ++counts_.resyncs;
      QueueFrame(*sub, w->id, EncodeResyncEvent(w->id, version_));
    } else {
      auto first = std::upper_bound(history_.begin(), history_.end(), since,
                                    [](uint64_t v, const Change& c) { return v < c.version; });
      for (auto c = first; c != history_.end() && sub->Find(opened.watch) != nullptr; ++c) {
        if (c->table == *w->table && w->Matches(c->key)) {
          QueueChange(*w, c->body, c->key);
        }
      }
    }
  }
  return opened;
}

void WatchHub::Ready(const Connection& conn, uint64_t watch,
                     const std::vector<std::pair<std::string, std::string>>& values) {
  MutexLock lock(&mu_);
  Sub* sub = SubOf(conn);
  if (sub == nullptr) return;
  Watch* w = sub->Find(watch);
  if (w == nullptr) return;
  for (const auto& [key, value] : values) {
    QueueFrame(*sub, watch, EncodeInitialEvent(watch, key, value));
  }
  QueueFrame(*sub, watch, EncodeReadyEvent(watch, version_));
  if (!w->held) return;
  w->held = false;
  Held held;
  if (auto it = held_.find(watch); it != held_.end()) {
    held = std::move(it->second);
    held_.erase(it);
  }
  for (Item& item : held.items) {
    if (sub->Find(watch) == nullptr) break;  // ended by its bound (w is gone)
    QueueChange(*w, item.body, item.key);
  }
}

Status WatchHub::Unwatch(const Connection& conn, uint64_t watch, std::string reply) {
  MutexLock lock(&mu_);
  Sub* sub = SubOf(conn);
  Watch* w = sub != nullptr ? sub->Find(watch) : nullptr;
  if (w == nullptr) return BadRequest("this connection has no watch " + std::to_string(watch));
  End(*w, "", "");
  QueueFrame(*sub, 0, std::move(reply));
  return Status::Ok();
}

void WatchHub::Fail(const Connection& conn, uint64_t watch, std::string_view message) {
  MutexLock lock(&mu_);
  Sub* sub = SubOf(conn);
  if (sub == nullptr) return;
  if (Watch* w = sub->Find(watch); w != nullptr) End(*w, "error", message);
}

void WatchHub::EndAll(const Connection& conn, std::string_view reason, std::string_view message) {
  MutexLock lock(&mu_);
  Sub* sub = SubOf(conn);
  if (sub == nullptr) return;
  while (Watch* w = sub->AnyWatch()) End(*w, reason, message);
}

void WatchHub::Drop(Connection& conn) {
  MutexLock lock(&mu_);
  conn.watches_closed = true;
  Sub* sub = SubOf(conn);
  if (sub == nullptr) return;
  while (Watch* w = sub->AnyWatch()) End(*w, "", "");
  dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), sub), dirty_.end());
  *sub = Sub{};
  free_subs_.push_back(conn.watch_sub - 1);
  conn.watch_sub = 0;
}

void WatchHub::Deliver() {
  // The connections to serve, by loop: one of them to post through, and all.
  struct LoopBatch {
    std::shared_ptr<Connection> poster;
    std::vector<std::weak_ptr<Connection>> conns;
  };
  std::unordered_map<const void*, LoopBatch> by_loop;
  {
    MutexLock lock(&mu_);
    std::vector<Sub*> dirty;
    dirty.swap(dirty_);
    std::vector<Out> out;
    for (Sub* sub : dirty) {
      std::shared_ptr<Connection> conn = sub->conn.lock();
      if (!conn) {
        sub->dirty = false;
        continue;
      }
      if (const void* loop = conn->loop(); loop != nullptr) {
        // Stays dirty until its loop's task runs: changes queued meanwhile
        // go with it, and no second task is posted for it.
        LoopBatch& batch = by_loop[loop];
        if (!batch.poster) batch.poster = conn;
        batch.conns.push_back(std::move(conn));
      } else {
        sub->dirty = false;
        TakeFrom(*sub, &out);
      }
    }
    // A connection with no loop is served here, under mu_ (allowed by the
    // lock order), so two Deliver calls cannot reorder its frames.
    Send(out);
  }
  for (auto& [loop, batch] : by_loop) {
    batch.poster->RunOnLoop([this, conns = std::move(batch.conns)] { DeliverOnLoop(conns); });
  }
}

void WatchHub::DeliverOwn(const Connection& conn) {
  std::vector<Out> out;
  {
    MutexLock lock(&mu_);
    if (Sub* sub = SubOf(conn); sub != nullptr) TakeFrom(*sub, &out);
  }
  Send(out);
}

void WatchHub::DeliverOnLoop(const std::vector<std::weak_ptr<Connection>>& conns) {
  std::vector<Out> out;
  {
    MutexLock lock(&mu_);
    for (const std::weak_ptr<Connection>& weak : conns) {
      std::shared_ptr<Connection> conn = weak.lock();
      if (!conn) continue;
      Sub* sub = SubOf(*conn);
      if (sub == nullptr) continue;  // dropped meanwhile
      sub->dirty = false;
      TakeFrom(*sub, &out);
    }
  }
  Send(out);
}

void WatchHub::TakeFrom(Sub& sub, std::vector<Out>* out) {
  std::shared_ptr<Connection> conn = sub.conn.lock();
  if (!conn) return;
  if (!sub.backlog) return;
  Backlog& b = *sub.backlog;
  // What the socket holds, plus what this pass takes for it.
  size_t unsent = conn->unsent_bytes();
  while (!b.queue.empty() && unsent < options_.coalesce_bytes) {
    Item& item = b.queue.front();
    if (item.head.empty()) {
      --b.holes;
    } else {
      if (item.body) {
        if (b.last_change) {
          auto last = b.last_change->find(ChangeSlot(item.watch, item.key));
          if (last != b.last_change->end() && last->second == b.popped) {
            b.last_change->erase(last);
          }
        }
        ++counts_.events;
      }
      unsent += item.bytes();
    }
    b.bytes -= item.bytes();
    if (!item.head.empty()) out->push_back(Out{conn, std::move(item)});
    b.queue.pop_front();
    ++b.popped;
  }
  if (b.queue.empty()) {
    // Caught up: no coalescing index, no queue, until frames wait again.
    sub.backlog.reset();
  } else {
    RetryLater(conn);
  }
}

void WatchHub::Send(std::vector<Out>& out) {
  // In queue order per connection: a connection's frames are taken and
  // sent on its own loop only (or, with no loop, under mu_), so none
  // overtakes another.
  for (Out& o : out) {
    if (o.item.body) {
      o.conn->SendShared(o.item.head, o.item.body);
    } else {
      o.conn->Send(std::move(o.item.head));
    }
  }
}

void WatchHub::RetryLater(const std::shared_ptr<Connection>& conn) {
  Sub* sub = SubOf(*conn);
  if (sub == nullptr || sub->retry_posted) return;
  sub->retry_posted = true;
  // The socket is full: offered again on the connection's own loop, until
  // the client reads or the queue's bound ends its watches.
  conn->PostAfter(kRetryAfter, [this, weak = std::weak_ptr<Connection>(conn)] {
    std::shared_ptr<Connection> c = weak.lock();
    if (!c) return;
    std::vector<Out> out;
    {
      MutexLock lock(&mu_);
      Sub* s = SubOf(*c);
      if (s == nullptr) return;
      s->retry_posted = false;
      TakeFrom(*s, &out);
    }
    Send(out);
  });
}

WatchStats WatchHub::stats() const {
  MutexLock lock(&mu_);
  WatchStats s = counts_;
  s.watches = open_;
  s.version = version_;
  s.history_changes = history_.size();
  s.history_bytes = history_bytes_;
  for (size_t i = 0; i < subs_made_; ++i) s.queued_bytes += SubAt(i).queued_bytes();
  return s;
}

}  // namespace skiff::server::internal
