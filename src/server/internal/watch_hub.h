// WatchHub: the live values of keys, prefixes and tables (`watch`,
// docs/protocol.md "watch / unwatch"), for one instance.
//
// The write path publishes each change once it is durable under the
// server's durability (Documents): the hub numbers it (its version, so a
// key's versions follow its commit order and a connection gets changes in
// the order they were numbered), encodes it once, keeps it in a bounded
// history for watches that resume with `since`, and queues it for every
// watch it matches; the queues share the change's one encoding. Deliver()
// (after the key's shard lock is let go) posts one task per I/O loop that
// has connections to serve; on the loop, the task takes their frames out of
// the hub under its lock, hands them to the connections outside it, and the
// loop writes them all at the end of its turn. So the writer's thread (the
// committer's, or a request's) does no per-watcher work, and Publish never
// waits behind a delivery.
//
// Each connection's queue is bounded: while the socket holds more than
// `coalesce_bytes` unsent, frames wait here, and past that size a key's
// queued change is dropped for its newer one, queued last and marked
// coalesced (versions still arrive in increasing order); past
// `max_queue_bytes` the watch that would grow it ends with an `overflow`
// event. A connection whose socket is full is retried on its own loop.
//
// Only tables that have been watched since the server started are
// recorded (a write to another table costs one check); a `since` from
// before that, older than the history holds, or from another run of the
// server gets a `resync` event.
//
// In cluster mode nothing is published here: every instance's changes come
// numbered from the cluster's watch log, in version order (the Feed
// methods, called by cluster/watch_feed.h), and are queued alike.
// Thread-safe: every method takes mu_. Lock order: a shard's mutex, then
// mu_, then a connection's outgoing queue.
#ifndef SKIFF_SERVER_INTERNAL_WATCH_HUB_H_
#define SKIFF_SERVER_INTERNAL_WATCH_HUB_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "server/internal/connection.h"

namespace skiff::server::internal {

struct WatchOptions {
  // Changes kept for `since`: at most this many, and this many bytes of
  // encoded changes.
  size_t history_count = 10000;
  size_t history_bytes = 16 * 1024 * 1024;
  // Watches open at once on one connection and on the whole server.
  size_t max_per_connection = 64;
  size_t max_total = 10000;
  // Per connection: frames waiting past this many bytes coalesce per key;
  // past max_queue_bytes the watch that grows the queue ends (overflow).
  size_t coalesce_bytes = 256 * 1024;
  size_t max_queue_bytes = 4 * 1024 * 1024;
};

struct WatchStats {
  uint64_t watches = 0;          // open now
  uint64_t version = 0;          // of the last change numbered
  uint64_t history_changes = 0;  // held for `since`
  uint64_t history_bytes = 0;
  uint64_t queued_bytes = 0;  // waiting in connections' queues
  uint64_t opened = 0;        // ever
  uint64_t events = 0;        // change frames handed to connections
  uint64_t coalesced = 0;     // changes replaced by a newer one of their key
  uint64_t overflows = 0;     // watches ended by their queue's bound
  uint64_t resyncs = 0;       // `since` not held
  uint64_t refused = 0;       // over a limit
};

// What a watch follows in its table.
struct WatchFilter {
  enum class Kind { kKey, kPrefix, kTable };
  std::string table;
  Kind kind = Kind::kTable;
  std::string text;  // the key or the prefix

  bool Matches(std::string_view key) const;
};

class WatchHub {
 public:
  explicit WatchHub(const WatchOptions& options) : options_(options) {}
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Whether changes of `table` are published (a watch was opened on it).
  bool Records(std::string_view table) const;
  // Starts recording `table`; true when it was not recorded before (the
  // caller then makes sure earlier writes are committed before it opens a
  // watch, so none of them is numbered after the watch's start).
  bool Record(const std::string& table);
  // Once those writes are committed: a `since` from before now cannot be
  // served for `table` (a change of it may have gone unnumbered).
  void RecordedFrom(const std::string& table);

  // A durable change: numbered, kept and queued for the watches it
  // matches. `value` is the document's JSON text, nullopt once deleted.
  void Publish(std::string_view table, std::string_view key, std::optional<std::string_view> value);
  // --- Cluster mode: the changes of every instance, numbered by the
  // cluster's watch log and fed here in version order (cluster/watch_feed.h)
  // instead of Record and Publish. ---
  // The log stood at `version` with `tables` watched; what follows is fed
  // from there. First at start; again when the feed fell behind what the
  // log still holds: then every open watch gets a resync event (it missed
  // changes), and no `since` before `version` is served.
  void FeedFrom(uint64_t version, const std::vector<std::string>& tables);
  // `table` is watched across the cluster: its changes after `version`
  // are in the log.
  void FeedRecorded(const std::string& table, uint64_t version);
  // A change the log numbered `version`, above every version fed before.
  void FeedChange(uint64_t version, std::string_view table, std::string_view key,
                  std::optional<std::string_view> value);

  // Hands queued frames to their connections (never under a shard lock),
  // through a task on each connection's loop.
  void Deliver();
  // Hands `conn`'s queued frames to it at once. Only on its loop's thread
  // (its request handler), where its other deliveries run, so that nothing
  // overtakes them: an `ended` event then leaves before the reply after it.
  void DeliverOwn(const Connection& conn);

  struct Opened {
    uint64_t watch = 0;
    uint64_t version = 0;  // changes numbered after it are sent
  };
  // Opens a watch for the connection and queues its reply to request
  // `request_id`, then (with `since`) the held changes after it or a
  // resync. With `hold`, changes wait until Ready (the caller sends the
  // initial values first). Errors: the limits, in words.
  Result<Opened> Open(const std::shared_ptr<Connection>& conn, uint64_t request_id,
                      WatchFilter filter, uint64_t since, bool hold);
  // The initial values of a held watch, then `ready`, then the changes
  // that waited; nothing when the watch ended meanwhile.
  void Ready(const Connection& conn, uint64_t watch,
             const std::vector<std::pair<std::string, std::string>>& values);
  // Ends a watch with an `ended` event saying why (its initial values
  // could not be read).
  void Fail(const Connection& conn, uint64_t watch, std::string_view message);
  // Ends a watch of the connection and queues `reply` after its last
  // event; not_found-like bad_request when it has no such watch.
  Status Unwatch(const Connection& conn, uint64_t watch, std::string reply);
  // Ends every watch of the connection with an `ended` event (logout).
  void EndAll(const Connection& conn, std::string_view reason, std::string_view message);
  // The connection closed: forgets it and its watches, and refuses any it
  // asks for later (a request of it still on a store worker).
  void Drop(Connection& conn);

  WatchStats stats() const;

 private:
  struct Item {
    uint64_t watch = 0;
    std::string head;                         // the whole frame when body is null
    std::shared_ptr<const std::string> body;  // a change's shared encoding
    std::string key;                          // a change's key ("" otherwise)
    size_t bytes() const { return head.size() + (body ? body->size() : 0); }
  };
  // A connection's queue: a vector read from `head_`. (A std::deque
  // allocates about 600 bytes as it is made, which every watching
  // connection would pay while its queue is empty, as it nearly always is.)
  // Emptied, it gives its storage back: a watcher that keeps up holds no
  // queue between deliveries.
  class ItemQueue {
   public:
    bool empty() const { return head_ == items_.size(); }
    size_t size() const { return items_.size() - head_; }
    Item& operator[](size_t i) { return items_[head_ + i]; }
    Item& front() { return items_[head_]; }
    std::vector<Item>::iterator begin() { return items_.begin() + head_; }
    std::vector<Item>::iterator end() { return items_.end(); }
    void push_back(Item item) { items_.push_back(std::move(item)); }
    void pop_front() {
      items_[head_++] = Item{};
      if (head_ == items_.size()) {
        std::vector<Item>().swap(items_);
        head_ = 0;
      } else if (head_ >= kCompactAfter && head_ * 2 >= items_.size()) {
        items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
    }
    void swap(ItemQueue& other) {
      items_.swap(other.items_);
      std::swap(head_, other.head_);
    }

   private:
    // Taken items at the front are dropped once there are this many and
    // they are half the vector.
    static constexpr size_t kCompactAfter = 64;
    std::vector<Item> items_;
    size_t head_ = 0;
  };
  // Changes that wait for a watch's initial values (Ready), one per key.
  struct Held {
    std::vector<Item> items;
    size_t bytes = 0;
  };
  struct Sub;
  // Kept small (64 bytes): a server may hold one per connection for
  // thousands of connections. What only some watches need for a while
  // (the changes that wait for initial values) is in held_, by id.
  struct Watch {
    uint64_t id = 0;                     // 0: a free slot (Sub::first)
    const std::string* table = nullptr;  // the key of recorded_: one copy per table
    std::string text;                    // the key or the prefix
    Sub* sub = nullptr;
    WatchFilter::Kind kind = WatchFilter::Kind::kTable;
    bool held = false;  // waits for Ready; its changes are in held_

    bool Matches(std::string_view key) const;
  };
  // What a connection has queued and not yet handed to its socket. Made
  // when a frame is queued, let go once all are taken: a watcher that
  // keeps up holds none between deliveries.
  struct Backlog {
    ItemQueue queue;
    size_t bytes = 0;
    uint64_t popped = 0;  // items ever taken off the front of queue
    size_t holes = 0;     // items of queue emptied by a coalesced change
    // The queued change of each (watch, key), by its position counted from
    // the first item ever queued: where a newer change coalesces. Built
    // only once the queue is past coalesce_bytes (a slow reader), let go
    // when it empties: a reader that keeps up pays nothing for it.
    std::unique_ptr<std::unordered_map<std::string, uint64_t>> last_change;
  };
  // One connection's watches and backlog, 104 bytes while it keeps up:
  // most connections watch one thing, so the first watch is kept in
  // place and the others (up to max_per_connection) beside it.
  struct Sub {
    std::weak_ptr<Connection> conn;
    std::unique_ptr<Backlog> backlog;  // null while nothing waits
    Watch first;                       // free when its id is 0
    std::unique_ptr<std::vector<std::unique_ptr<Watch>>> more;
    bool retry_posted = false;
    // Queued to since it was last delivered: on dirty_, or in a loop's
    // task not run yet.
    bool dirty = false;

    Watch* Find(uint64_t id);
    size_t watch_count() const;
    // Any one of its watches; null when it has none.
    Watch* AnyWatch();
    // A free watch record, kept in place (its address does not change).
    Watch& AddWatch();
    void RemoveWatch(uint64_t id);
    Backlog& backlog_made() {
      if (!backlog) backlog = std::make_unique<Backlog>();
      return *backlog;
    }
    size_t queued_bytes() const { return backlog ? backlog->bytes : 0; }
  };
  // What memory per watch rests on (fanout_bench's bytes_per_watch).
  static_assert(sizeof(Watch) <= 64 && sizeof(Sub) <= 104);
  // A frame taken out of a queue, handed to its connection outside mu_.
  struct Out {
    std::shared_ptr<Connection> conn;
    Item item;
  };
  struct Change {
    uint64_t version;
    std::string table;
    std::string key;
    std::shared_ptr<const std::string> body;
  };

  static std::string ChangeSlot(uint64_t watch, std::string_view key);
  // Keeps the change numbered `version` and queues it for its watches.
  void PublishAt(uint64_t version, std::string_view table, std::string_view key,
                 std::optional<std::string_view> value) SKIFF_REQUIRES(mu_);
  Sub* SubOf(const Connection& conn) SKIFF_REQUIRES(mu_);
  // A record for the connection, which has none.
  Sub& NewSub(const std::shared_ptr<Connection>& conn) SKIFF_REQUIRES(mu_);
  Sub& SubAt(size_t slot) const SKIFF_REQUIRES(mu_) {
    return sub_blocks_[slot / kSubsPerBlock][slot % kSubsPerBlock];
  }
  // Queues a change for `w`, coalescing or ending it at the bounds.
  void QueueChange(Watch& w, const std::shared_ptr<const std::string>& body, std::string_view key)
      SKIFF_REQUIRES(mu_);
  void QueueFrame(Sub& sub, uint64_t watch, std::string frame) SKIFF_REQUIRES(mu_);
  // Drops the holes of the queue and, unless 0, the frames of `drop_watch`.
  void Compact(Backlog& backlog, uint64_t drop_watch) SKIFF_REQUIRES(mu_);
  // (Re)builds last_change from the queue. Touches only `backlog`, but a
  // backlog is the hub's, read and written under mu_ like the rest.
  void IndexChanges(Backlog& backlog) SKIFF_REQUIRES(mu_);
  // Removes the watch and its queued frames; with a reason, queues an
  // `ended` event in their place.
  void End(Watch& w, std::string_view reason, std::string_view message) SKIFF_REQUIRES(mu_);
  void MarkDirty(Sub& sub) SKIFF_REQUIRES(mu_);
  // Takes out what the connection's socket takes now into *out; retries
  // later if not all.
  void TakeFrom(Sub& sub, std::vector<Out>* out) SKIFF_REQUIRES(mu_);
  // On a loop: delivers the queues of `conns` (all of that loop).
  void DeliverOnLoop(const std::vector<std::weak_ptr<Connection>>& conns);
  // Hands taken frames to their connections (without mu_).
  void Send(std::vector<Out>& out);
  void RetryLater(const std::shared_ptr<Connection>& conn) SKIFF_REQUIRES(mu_);

  const WatchOptions options_;
  std::atomic<bool> any_recorded_{false};
  mutable Mutex mu_;
  // Each recorded table, with the version at which its recording began.
  // Never erased: watches point at its keys.
  std::unordered_map<std::string, uint64_t> recorded_ SKIFF_GUARDED_BY(mu_);
  uint64_t version_ SKIFF_GUARDED_BY(mu_) = 0;
  std::deque<Change> history_ SKIFF_GUARDED_BY(mu_);
  size_t history_bytes_ SKIFF_GUARDED_BY(mu_) = 0;
  uint64_t dropped_through_ SKIFF_GUARDED_BY(mu_) = 0;  // last version let go of
  uint64_t next_watch_ SKIFF_GUARDED_BY(mu_) = 0;
  size_t open_ SKIFF_GUARDED_BY(mu_) = 0;
  // The connections' records, in blocks of kSubsPerBlock that never move (a
  // Sub's address is kept by its watches and dirty_), found from the
  // connection by its `watch_sub`: no map node or hash bucket per watching
  // connection. Slots of closed connections are reused.
  static constexpr size_t kSubsPerBlock = 64;
  std::vector<std::unique_ptr<Sub[]>> sub_blocks_ SKIFF_GUARDED_BY(mu_);
  size_t subs_made_ SKIFF_GUARDED_BY(mu_) = 0;
  std::vector<uint32_t> free_subs_ SKIFF_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::vector<Watch*>> by_table_ SKIFF_GUARDED_BY(mu_);
  std::vector<Sub*> dirty_ SKIFF_GUARDED_BY(mu_);
  // The changes that wait for a held watch's initial values, by its id.
  std::unordered_map<uint64_t, Held> held_ SKIFF_GUARDED_BY(mu_);
  WatchStats counts_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WATCH_HUB_H_
