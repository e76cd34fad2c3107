// BootstrapReadAhead: the next bootstrap page of a connection, read while
// the client takes the page before it.
//
// A device pages through a bootstrap one request at a time: it asks for the
// page after the one it just got. Reading that page only when the request
// arrives leaves the store idle while the page before travels and the
// request comes back, so each page costs a read plus a round trip. Once a
// page with a `next` is sent, the server reads the next one at once and
// keeps it with the connection; the request for it is answered from there.
//
// What a kept page may cost:
// - one page per connection, dropped by its next bootstrap, a push, a
//   logout or the connection's end;
// - all connections together at most `ReadAheadBudget::capacity` bytes. Room
//   for a page the size of the one just sent is taken before the read, so a
//   full budget costs no read; a page that turns out larger than its room
//   and does not fit is dropped. A page over a sixteenth of the budget is
//   never read ahead;
// - a connection whose kept page was not the one asked for stops reading
//   ahead, so a client that does not follow its pages in order costs at
//   most one wasted read.
//
// A kept page is used only for the same cursor, limit and session groups
// (the shared list a login sets), so it never answers another session.
// Its rows may be older than the request, as rows read at the request
// could be older than the reply's arrival: a bootstrap pulls from its
// first page's cursor afterwards, which brings every later change.
//
// Touched only on the connection's behalf while nothing else of it runs:
// by its bootstrap requests, one at a time on a store worker while the
// connection is not read (`barrier`), and by a push or logout on its I/O
// thread, which runs only when none of its requests is on a worker.
#ifndef SKIFF_SERVER_INTERNAL_BOOTSTRAP_READ_AHEAD_H_
#define SKIFF_SERVER_INTERNAL_BOOTSTRAP_READ_AHEAD_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/store.h"
#include "sync/types.h"

namespace skiff::server::internal {

// Bytes of kept pages, across connections.
class ReadAheadBudget {
 public:
  explicit ReadAheadBudget(size_t capacity) : capacity_(capacity) {}
  bool TryTake(size_t bytes) {
    size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > capacity_ - used) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void Give(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  std::atomic<size_t> used_{0};
};

// Bytes taken from a budget, given back when dropped.
class BudgetRoom {
 public:
  // nullopt when the budget lacks `bytes`.
  static std::optional<BudgetRoom> Take(std::shared_ptr<ReadAheadBudget> budget, size_t bytes) {
    if (!budget->TryTake(bytes)) return std::nullopt;
    return BudgetRoom(std::move(budget), bytes);
  }
  BudgetRoom(BudgetRoom&& other) noexcept
      : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}
  BudgetRoom& operator=(BudgetRoom&&) = delete;
  ~BudgetRoom() {
    if (budget_) budget_->Give(bytes_);
  }

  // Grows or shrinks the room to `bytes`; false, the room unchanged, when
  // the budget lacks what growing needs.
  bool Resize(size_t bytes) {
    if (bytes > bytes_ && !budget_->TryTake(bytes - bytes_)) return false;
    if (bytes < bytes_) budget_->Give(bytes_ - bytes);
    bytes_ = bytes;
    return true;
  }
  size_t bytes() const { return bytes_; }

 private:
  BudgetRoom(std::shared_ptr<ReadAheadBudget> budget, size_t bytes)
      : budget_(std::move(budget)), bytes_(bytes) {}

  // Shared: a connection may outlive the server that read its page.
  std::shared_ptr<ReadAheadBudget> budget_;
  size_t bytes_;
};

class BootstrapReadAhead {
 public:
  // The kept page if it answers (after, limit) for `groups`; the kept page
  // is dropped either way. A miss turns reading ahead off.
  std::optional<sync::BootstrapReply> Take(
      const store::SyncRowCursor& after, size_t limit,
      const std::shared_ptr<const std::vector<std::string>>& groups) {
    std::optional<Kept> kept = std::exchange(kept_, std::nullopt);
    if (!kept) return std::nullopt;
    if (kept->after == after && kept->limit == limit && kept->groups == groups) {
      return std::move(kept->reply);
    }
    enabled_ = false;
    return std::nullopt;
  }

  // Drops the kept page: a push of this connection may have changed it.
  void Drop() { kept_.reset(); }
  // A session ended: drops the kept page and reads ahead again.
  void Reset() {
    kept_.reset();
    enabled_ = true;
  }

  // Whether the page after one just sent should be read ahead: the client
  // has followed its pages so far.
  bool enabled() const { return enabled_; }

  // Room for reading ahead the page after `sent`, sized like it; nullopt
  // when the budget lacks it or the page would be over a sixteenth of it.
  static std::optional<BudgetRoom> Reserve(const std::shared_ptr<ReadAheadBudget>& budget,
                                           const sync::BootstrapReply& sent) {
    const size_t bytes = BytesOf(sent);
    if (bytes > budget->capacity() / 16) return std::nullopt;
    return BudgetRoom::Take(budget, bytes);
  }

  // Keeps `reply`, read for (after, limit, groups) in `room`, resized to
  // the page; false, and `room` given back, when the page does not fit.
  bool Keep(BudgetRoom room, const store::SyncRowCursor& after, size_t limit,
            std::shared_ptr<const std::vector<std::string>> groups, sync::BootstrapReply reply) {
    if (!room.Resize(BytesOf(reply))) return false;
    kept_.emplace(Kept{std::move(room), after, limit, std::move(groups), std::move(reply)});
    return true;
  }

  bool holding() const { return kept_.has_value(); }

  // Heap bytes a page holds, near enough for a budget (short strings'
  // inline room counts too).
  static size_t BytesOf(const sync::BootstrapReply& reply) {
    size_t bytes = sizeof(Kept) + reply.rows.capacity() * sizeof(store::SyncRow);
    for (const store::SyncRow& row : reply.rows) {
      bytes +=
          row.group.capacity() + row.table.capacity() + row.key.capacity() + row.value.capacity();
    }
    return bytes;
  }

 private:
  struct Kept {
    BudgetRoom room;
    store::SyncRowCursor after;
    size_t limit = 0;
    std::shared_ptr<const std::vector<std::string>> groups;
    sync::BootstrapReply reply;
  };
  std::optional<Kept> kept_;
  bool enabled_ = true;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_BOOTSTRAP_READ_AHEAD_H_
