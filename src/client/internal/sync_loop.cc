#include "client/internal/sync_loop.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace skiff::client::internal {
namespace {

// Errors a retry cannot fix: the entries that caused them are dropped.
bool IsFinal(const Status& s) {
  return s.code() == StatusCode::kForbidden || s.code() == StatusCode::kBadRequest ||
         s.code() == StatusCode::kTooLarge;
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

void SyncLoop::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void SyncLoop::Close() {
  std::shared_ptr<Client> client;
  {
    MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    client = client_;
  }
  cv_.SignalAll();
  // A request in flight (a pull from a server that stopped answering)
  // fails now instead of at its timeout. Outside the lock: the failed
  // requests' callbacks take it.
  if (client) client->Shutdown();
  if (thread_.joinable()) thread_.join();
}

void SyncLoop::Poke() {
  {
    MutexLock lock(&mu_);
    poked_ = true;
  }
  cv_.SignalAll();
}

SyncState SyncLoop::state() const {
  MutexLock lock(&mu_);
  return state_;
}

Status SyncLoop::last_error() const {
  MutexLock lock(&mu_);
  return last_error_;
}

DeviceCounters SyncLoop::counters() const {
  MutexLock lock(&mu_);
  return CountersLocked();
}

DeviceCounters SyncLoop::synced_counters() const {
  MutexLock lock(&mu_);
  return synced_counters_;
}

Status SyncLoop::WaitUntilSynced(std::chrono::milliseconds timeout) {
  MutexLock lock(&mu_);
  if (!options_.sync) return BadRequest("this device was opened without sync");
  const uint64_t target = rounds_started_ + 1;
  poked_ = true;
  cv_.SignalAll();
  const auto deadline = clock_.Now() + timeout;
  while (synced_round_ < target && !stopping_ && clock_.WaitUntil(cv_, mu_, deadline)) {
  }
  if (synced_round_ >= target) return Status::Ok();
  return Unavailable("not synced within " + std::to_string(timeout.count()) +
                     " ms; last error: " + last_error_.ToString());
}

Status SyncLoop::WaitUntilUpToDate(std::chrono::milliseconds timeout) {
  MutexLock lock(&mu_);
  if (!options_.sync) return BadRequest("this device was opened without sync");
  const auto deadline = clock_.Now() + timeout;
  while (synced_round_ < 1 && !stopping_ && clock_.WaitUntil(cv_, mu_, deadline)) {
  }
  if (synced_round_ >= 1) return Status::Ok();
  return Unavailable("not up to date within " + std::to_string(timeout.count()) +
                     " ms; last error: " + last_error_.ToString());
}

DeviceCounters SyncLoop::CountersLocked() const {
  DeviceCounters c = counters_;
  Add(c, wire_done_);
  if (client_) Add(c, client_->wire_counters());
  return c;
}

// Rounds of push and pull, a held wait between rounds, exponential back-off
// after errors.
void SyncLoop::Loop() {
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
      const auto deadline = clock_.Now() + backoff;
      while (!stopping_ && clock_.WaitUntil(cv_, mu_, deadline)) {
      }
      backoff = std::min(backoff * 2, options_.backoff_max);
    }
  }
  DropClient();
  MutexLock lock(&mu_);
  state_ = SyncState::kOffline;
}

void SyncLoop::DropClient() {
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

Status SyncLoop::Connect() {
  ClientOptions o;
  o.host = options_.host;
  o.port = options_.port;
  o.tls = options_.tls;
  o.tls_ca_file = options_.tls_ca_file;
  o.tls_insecure = options_.tls_insecure;
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

void SyncLoop::CountRequest(uint64_t DeviceCounters::*op) {
  MutexLock lock(&mu_);
  ++counters_.requests;
  ++(counters_.*op);
}

// Runs on the loop thread, which alone replaces client_, so the pointer is
// stable from here on down.
Status SyncLoop::Round() {
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
Status SyncLoop::Idle() {
  uint64_t since;
  {
    MutexLock lock(&mu_);
    if (replica_.outbox_size() != 0) return Status::Ok();  // written meanwhile: go again
    last_error_ = Status::Ok();
    state_ = SyncState::kOnline;
    synced_round_ = round_;
    synced_counters_ = CountersLocked();
    if (poked_ || stopping_) {
      cv_.SignalAll();
      return Status::Ok();
    }
    since = replica_.position().cursor;
  }
  cv_.SignalAll();
  return HoldWait(since);
}

// Holds a wait until it answers, a local write or sync request pokes the
// loop, or Close. A wait left behind by a poke stays in flight and is
// reused by the next hold instead of opening another, so a device never
// has more than one: its older `since` is still correct, because anything
// past it that the loop already pulled would have answered it.
Status SyncLoop::HoldWait(uint64_t since) {
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
    client_->Wait({since, options_.wait_timeout}, [this, slot](Result<WaitReply> reply) {
      {
        MutexLock lock(&mu_);
        slot->done = true;
        slot->reply = reply.status();
      }
      cv_.SignalAll();
    });
  }
  MutexLock lock(&mu_);
  while (!slot->done && !poked_ && !stopping_) cv_.Wait(mu_);
  if (!slot->done) return Status::Ok();
  wait_slot_.reset();
  return *slot->reply;
}

// Pages are asked for one ahead: as soon as a reply names the page after
// it (the server writes that before the rows), the client's I/O thread
// asks for that page, then reads this one's rows, while this thread
// applies the page before (bootstrap_feed.h). So the server's reading and
// sending, the client's reading and this thread's applying overlap.
Status SyncLoop::BootstrapAll() {
  const SyncPosition start = replica_.position();
  if (start.bootstrapped) return Status::Ok();
  auto feed = std::make_shared<BootstrapFeed>();
  // Runs before this returns, so no ask of the I/O thread is under way
  // once the loop may replace the client; the I/O thread's asks are
  // counted then.
  struct CloseFeed {
    SyncLoop& loop;
    BootstrapFeed& feed;
    ~CloseFeed() {
      const uint64_t asked = feed.Close();
      MutexLock lock(&loop.mu_);
      loop.counters_.requests += asked;
      loop.counters_.bootstraps += asked;
    }
  } close_feed{*this, *feed};
  CountRequest(&DeviceCounters::bootstraps);
  AskForPage(client_.get(), options_.page, start.bootstrap_after, feed);
  for (;;) {
    BootstrapFeed::Entry entry = feed->Pop();
    SKIFF_ASSIGN_OR_RETURN(BootstrapPage page, std::move(entry.page));
    if (!entry.next_asked && page.next) {
      CountRequest(&DeviceCounters::bootstraps);
      AskForPage(client_.get(), options_.page, page.next, feed);
    }
    // Only this thread moves the position, so it is not read stale here.
    SyncPosition position = replica_.position();
    // The first page's cursor is where pulling starts once all is in.
    if (!position.bootstrap_after) position.bootstrap_cursor = page.cursor;
    position.bootstrap_after = page.next;
    if (!page.next) {
      position.bootstrapped = true;
      position.cursor = position.bootstrap_cursor;
    }
    {
      MutexLock lock(&mu_);
      counters_.rows_received += page.rows.size();
    }
    SKIFF_RETURN_IF_ERROR(replica_.ApplyRemote(std::move(page.rows), position));
    if (!page.next) return Status::Ok();
  }
}

// The reply is read into rows on the client's I/O thread and pushed to
// `feed`. Reading a reply that names its next page first, that thread asks
// for the next page before it reads the rows, when the feed allows.
void SyncLoop::AskForPage(Client* client, size_t limit, const std::optional<RowName>& after,
                          const std::shared_ptr<BootstrapFeed>& feed) {
  const uint64_t number = feed->Ask();
  // Set by the first callback, read by the second, both on the I/O thread.
  auto next_asked = std::make_shared<bool>(false);
  client->Bootstrap(
      {after, limit},
      [feed, number, next_asked](Result<BootstrapPage> page) {
        feed->Push(number, std::move(page), *next_asked);
      },
      [client, limit, feed, next_asked](const std::optional<RowName>& next) {
        if (!next || !feed->BeginAskAhead()) return;
        struct EndAsk {
          BootstrapFeed& feed;
          ~EndAsk() { feed.EndAskAhead(); }
        } end_ask{*feed};
        AskForPage(client, limit, next, feed);
        *next_asked = true;
      });
}

Status SyncLoop::PullAll() {
  for (;;) {
    const uint64_t since = replica_.position().cursor;
    CountRequest(&DeviceCounters::pulls);
    SKIFF_ASSIGN_OR_RETURN(PullReply reply, client_->Pull({since, options_.page}));
    SyncPosition position = replica_.position();
    position.cursor = reply.cursor;
    {
      MutexLock lock(&mu_);
      counters_.changes_received += reply.changes.size();
    }
    SKIFF_RETURN_IF_ERROR(replica_.ApplyRemote(std::move(reply.changes), position));
    if (!reply.more) return Status::Ok();
  }
}

Status SyncLoop::PushAll() {
  for (;;) {
    size_t limit;
    {
      MutexLock lock(&mu_);
      limit = std::max<size_t>(1, push_limit_);
    }
    const std::vector<OutboxEntry> batch = replica_.Outbox(limit);
    if (batch.empty()) {
      MutexLock lock(&mu_);
      push_limit_ = options_.max_push;
      return Status::Ok();
    }
    CountRequest(&DeviceCounters::pushes);
    Result<PushReply> reply = client_->Push({options_.device_id, batch});
    uint64_t acked;
    if (reply.ok()) {
      acked = reply->last_seq;
    } else if (IsFinal(reply.status()) && batch.size() > 1) {
      // Find the refused entry: push one at a time until past it.
      MutexLock lock(&mu_);
      push_limit_ = 1;
      continue;
    } else if (IsFinal(reply.status())) {
      acked = batch.back().seq;
      MutexLock lock(&mu_);
      ++counters_.rejected;
      last_error_ = reply.status();
    } else {
      return reply.status();
    }
    SKIFF_ASSIGN_OR_RETURN(size_t dropped, replica_.Acknowledge(acked));
    if (reply.ok()) {
      MutexLock lock(&mu_);
      counters_.changes_pushed += dropped;
    }
  }
}

}  // namespace skiff::client::internal
