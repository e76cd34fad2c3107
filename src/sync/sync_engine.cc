#include "sync/sync_engine.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>
#include <string>

#include "doc/names.h"

namespace skiff::sync {
namespace {

// The message a pusher sees when its commit failed: never the store's own
// text, which may name other users' rows that shared the transaction.
Status PushCommitError(const Status& store_error) {
  switch (store_error.code()) {
    case StatusCode::kUnavailable:
      return Unavailable("the store could not commit this push; retry it");
    case StatusCode::kOutcomeUnknown:
      return OutcomeUnknown(
          "the store lost the answer to this push's commit; retry it (a retried push applies "
          "each change once)");
    case StatusCode::kBadRequest:
      return BadRequest("the store refused a change of this push: " + store_error.message());
    default:
      return Internal("committing this push failed");
  }
}

const std::vector<std::string>& GroupsOf(const Caller& caller) {
  static const std::vector<std::string> kNone;
  return caller.groups ? *caller.groups : kNone;
}

}  // namespace

SyncEngine::SyncEngine(store::Store& store, const Clock& clock, SyncOptions options)
    : store_(store), clock_(clock), options_(options) {}

Result<std::unique_ptr<SyncEngine>> SyncEngine::Start(store::Store& store, const Clock& clock,
                                                      SyncOptions options) {
  std::unique_ptr<SyncEngine> engine(new SyncEngine(store, clock, options));
  if (options.cluster) {
    if (store.kind() != "postgres") {
      return BadRequest("cluster mode needs PostgreSQL: the sync engine's store is " +
                        std::string(store.kind()));
    }
    // Listening before the state is read: no commit after the read goes
    // unannounced.
    SKIFF_ASSIGN_OR_RETURN(engine->listener_, store::ChangeListener::Open(options.store_url));
  }
  SKIFF_ASSIGN_OR_RETURN(uint64_t last, store.LastSyncId());
  SKIFF_ASSIGN_OR_RETURN(auto by_group, store.LastSyncIdByGroup());
  {
    // No other thread sees the engine yet; the lock is for the analysis.
    MutexLock lock(&engine->mu_);
    engine->cursor_ = last;
    engine->scanned_ = last;
    engine->group_last_ = std::move(by_group);
  }
  engine->committer_ = std::thread([e = engine.get()] { e->CommitLoop(); });
  if (options.expiry_thread) engine->expiry_ = std::thread([e = engine.get()] { e->ExpiryLoop(); });
  if (options.cluster) engine->feed_ = std::thread([e = engine.get()] { e->FeedLoop(); });
  return engine;
}

SyncEngine::~SyncEngine() { Stop(); }

void SyncEngine::Stop() {
  // A second caller waits for the first to finish rather than returning
  // while the threads still run.
  MutexLock stop_lock(&stop_mu_);
  {
    MutexLock lock(&mu_);
    if (stopping_ && !committer_.joinable()) return;
    stopping_ = true;
  }
  queue_cv_.SignalAll();
  expiry_cv_.SignalAll();
  feed_cv_.SignalAll();
  if (listener_) listener_->Interrupt();
  if (committer_.joinable()) committer_.join();  // commits what was queued first
  if (expiry_.joinable()) expiry_.join();
  if (feed_.joinable()) feed_.join();
  std::vector<WaitRegistry::Callback> held;
  {
    MutexLock lock(&mu_);
    held = waits_.TakeAll();
    counters_.waits_held = 0;
  }
  for (auto& callback : held) callback(false);
}

Status SyncEngine::ValidatePush(const Caller& caller, const PushRequest& request) const {
  if (request.device.empty()) return BadRequest("push needs a device id");
  SKIFF_RETURN_IF_ERROR(store::ValidateDevice(request.device));
  if (request.changes.size() > options_.max_changes_per_push) {
    return TooLarge("a push carries at most " + std::to_string(options_.max_changes_per_push) +
                    " changes");
  }
  uint64_t previous = 0;
  for (const PushChange& c : request.changes) {
    if (c.seq <= previous) return BadRequest("change seq must be positive and increasing");
    // Stored as signed 64-bit; a larger seq would also leave no room for
    // the device's next change.
    if (c.seq > store::kMaxDeviceSeq) return BadRequest("change seq must be below 2^63");
    previous = c.seq;
    SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(c.table));
    SKIFF_RETURN_IF_ERROR(doc::ValidateKey(c.key));
    SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(c.group));
    if (!caller.InGroup(c.group)) {
      return Forbidden("user '" + caller.user + "' is not in group '" + c.group + "'");
    }
  }
  return Status::Ok();
}

void SyncEngine::Push(const Caller& caller, PushRequest request, PushDone done) {
  if (Status s = ValidatePush(caller, request); !s.ok()) return done(s);
  {
    MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back({caller, std::move(request), std::move(done)});
      queue_cv_.Signal();
      return;
    }
  }
  done(Unavailable("the sync engine is shutting down"));
}

void SyncEngine::CommitLoop() {
  for (;;) {
    std::vector<QueuedPush> pushes;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) queue_cv_.Wait(mu_);
      if (queue_.empty()) return;  // stopping, and nothing left to commit
      size_t take = 0, changes = 0;
      while (take < queue_.size() && (take == 0 || changes + queue_[take].request.changes.size() <=
                                                       options_.max_changes_per_commit)) {
        changes += queue_[take].request.changes.size();
        ++take;
      }
      pushes.assign(std::make_move_iterator(queue_.begin()),
                    std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(take)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(take));
      committing_ = true;
    }
    CommitQueued(pushes);
    {
      MutexLock lock(&mu_);
      committing_ = false;
    }
    idle_cv_.SignalAll();
  }
}

void SyncEngine::Flush() {
  MutexLock lock(&mu_);
  while (!queue_.empty() || committing_) idle_cv_.Wait(mu_);
}

Status SyncEngine::Resync() {
  SKIFF_ASSIGN_OR_RETURN(uint64_t last, store_.LastSyncId());
  SKIFF_ASSIGN_OR_RETURN(auto by_group, store_.LastSyncIdByGroup());
  devices_.clear();  // their sequences may or may not have landed: read them again
  std::vector<WaitRegistry::Callback> woken;
  {
    MutexLock lock(&mu_);
    std::vector<std::string> moved;
    for (const auto& [group, id] : by_group) {
      auto it = group_last_.find(group);
      if (it == group_last_.end() || it->second < id) moved.push_back(group);
    }
    cursor_ = std::max(cursor_, last);
    group_last_ = std::move(by_group);
    woken = waits_.TakeWoken(moved);
    counters_.waits_woken += woken.size();
    counters_.waits_held = waits_.size();
  }
  for (auto& callback : woken) callback(true);
  needs_resync_ = false;
  return Status::Ok();
}

// Builds the batch in queue order, numbering changes as it goes.
void SyncEngine::BuildBatch(std::vector<QueuedPush>& pushes, const DeviceLookup& lookup,
                            Built* built) {
  for (QueuedPush& push : pushes) {
    const std::string& device = push.request.device;
    DeviceState state;
    if (auto t = built->touched_devices.find(device); t != built->touched_devices.end()) {
      state = t->second;
    } else {
      Result<DeviceState> found = lookup(push);
      if (!found.ok()) {
        built->results.push_back(PushCommitError(found.status()));
        continue;
      }
      state = std::move(*found);
    }
    if (state.user != push.caller.user) {
      built->results.push_back(Forbidden("device '" + device + "' belongs to another user"));
      continue;
    }
    PushReply reply;
    const bool new_device = state.last_seq == 0;
    // Copies, not moves: a failed batch is committed again push by push.
    for (const PushChange& c : push.request.changes) {
      if (c.seq <= state.last_seq) {
        ++built->skipped;  // a retried push: applied before, never twice
        continue;
      }
      const uint64_t id = built->next_id++;
      built->touched_groups[c.group] = id;
      built->batch.AppendChange({id, c.group, c.table, c.key, c.value});
      state.last_seq = c.seq;
      ++reply.applied;
    }
    if (reply.applied > 0 || new_device) {
      built->batch.SetDeviceSeq({device, state.user, state.last_seq});
    }
    built->applied += reply.applied;
    reply.last_seq = state.last_seq;
    built->touched_devices[device] = state;
    built->results.push_back(reply);
  }
  built->wrote = !built->batch.empty();
}

// Builds one batch from the given pushes, numbering changes from the
// cursor; commits it; then publishes the new cursor, wakes the waits of the
// groups it touched and answers the pushes.
void SyncEngine::CommitQueued(std::vector<QueuedPush>& pushes) {
  if (options_.cluster) return CommitClustered(pushes);
  if (needs_resync_) {
    if (Status s = Resync(); !s.ok()) {
      for (QueuedPush& push : pushes) push.done(PushCommitError(s));
      return;
    }
  }
  Built built;
  {
    MutexLock lock(&mu_);
    built.first_id = built.next_id = cursor_ + 1;
  }
  BuildBatch(
      pushes,
      [this](const QueuedPush& push) -> Result<DeviceState> {
        if (auto d = devices_.find(push.request.device); d != devices_.end()) return d->second;
        // The first push of a device since start: one read of its record.
        SKIFF_ASSIGN_OR_RETURN(std::optional<store::DeviceSeq> record,
                               store_.GetDevice(push.request.device));
        return record.has_value() ? DeviceState{record->user, record->last_seq}
                                  : DeviceState{push.caller.user, 0};
      },
      &built);

  Status committed = built.batch.empty() ? Status::Ok() : store_.Write(built.batch);
  if (!committed.ok()) {
    std::fprintf(stderr, "skiff sync: commit of %zu pushes failed: %s\n", pushes.size(),
                 committed.ToString().c_str());
    // Whatever the store says, read the committed state again before
    // numbering anything: an outcome_unknown commit may have landed. The
    // store's answer, not the cursor read here, says whether ours did: a
    // cursor that moved by as many ids as this batch held may be another
    // writer's commit.
    if (!Resync().ok()) needs_resync_ = true;
    if (!RetryAlone(pushes, committed)) AnswerFailed(pushes, built, committed);
    return;
  }
  for (auto& [device, state] : built.touched_devices) devices_[device] = state;
  Publish(pushes, built, built.next_id - 1);
}

// The store numbers the batch from its counter, under the counter's lock,
// with the devices' records read in the same transaction: nothing of
// another server's commits can be stale here, so nothing is cached.
void SyncEngine::CommitClustered(std::vector<QueuedPush>& pushes) {
  std::set<std::string> unique;
  for (const QueuedPush& push : pushes) unique.insert(push.request.device);
  const std::vector<std::string> devices(unique.begin(), unique.end());
  Built built;
  Result<uint64_t> last = store_.CommitSync(
      devices,
      [&](uint64_t counter, const std::map<std::string, store::DeviceSeq, std::less<>>& records,
          store::WriteBatch* batch) {
        built = Built();
        built.first_id = built.next_id = counter + 1;
        BuildBatch(
            pushes,
            [&records](const QueuedPush& push) -> Result<DeviceState> {
              auto it = records.find(push.request.device);
              if (it == records.end()) return DeviceState{push.caller.user, 0};
              return DeviceState{it->second.user, it->second.last_seq};
            },
            &built);
        std::swap(*batch, built.batch);
      });
  if (!last.ok()) {
    std::fprintf(stderr, "skiff sync: cluster commit of %zu pushes failed: %s\n", pushes.size(),
                 last.status().ToString().c_str());
    // An outcome_unknown commit may have landed: publish what did. The
    // numbering needs nothing: the next commit reads the counter again.
    if (Status s = CatchUp(); !s.ok()) {
      std::fprintf(stderr, "skiff sync: catching up after it failed too: %s\n",
                   s.ToString().c_str());
    }
    if (!RetryAlone(pushes, last.status())) {
      if (built.results.size() != pushes.size()) built.results.clear();  // never built
      AnswerFailed(pushes, built, last.status());
    }
    return;
  }
  Publish(pushes, built, *last);
  // After publishing: the pushes are answered without waiting for it, and
  // this engine's own notification finds its commit seen and costs no read.
  if (options_.notify && built.applied > 0) {
    // A lost notification only delays the other servers until their poll:
    // the push has committed.
    if (Status s = store_.NotifySync(*last); !s.ok()) {
      std::fprintf(stderr, "skiff sync: NOTIFY after sync commit %llu failed: %s\n",
                   static_cast<unsigned long long>(*last), s.ToString().c_str());
    }
  }
}

bool SyncEngine::RetryAlone(std::vector<QueuedPush>& pushes, const Status& committed) {
  if (committed.code() != StatusCode::kBadRequest || pushes.size() <= 1) return false;
  // One push's data was refused and nothing was applied: commit the others
  // without it.
  for (QueuedPush& push : pushes) {
    std::vector<QueuedPush> alone;
    alone.push_back(std::move(push));
    CommitQueued(alone);
  }
  return true;
}

void SyncEngine::AnswerFailed(std::vector<QueuedPush>& pushes, const Built& built,
                              const Status& committed) {
  for (size_t i = 0; i < pushes.size(); ++i) {
    const bool own_error = i < built.results.size() && !built.results[i].ok();
    pushes[i].done(own_error ? built.results[i].status() : PushCommitError(committed));
  }
}

std::vector<WaitRegistry::Callback> SyncEngine::AdvanceGroups(
    const std::map<std::string, uint64_t>& groups) {
  std::vector<std::string> moved;
  for (const auto& [group, id] : groups) {
    uint64_t& last = group_last_[group];
    if (last >= id) continue;  // seen already (a catch-up that read a local commit)
    last = id;
    moved.push_back(group);
  }
  std::vector<WaitRegistry::Callback> woken = waits_.TakeWoken(moved);
  counters_.waits_woken += woken.size();
  counters_.waits_held = waits_.size();
  return woken;
}

void SyncEngine::Publish(std::vector<QueuedPush>& pushes, Built& built, uint64_t last) {
  std::vector<WaitRegistry::Callback> woken;
  uint64_t cursor;
  {
    MutexLock lock(&mu_);
    cursor_ = std::max(cursor_, last);
    // Ids before this batch's may be other servers' commits not yet read.
    if (built.first_id <= scanned_ + 1) scanned_ = std::max(scanned_, last);
    woken = AdvanceGroups(built.touched_groups);
    counters_.changes_applied += built.applied;
    counters_.changes_skipped += built.skipped;
    if (built.wrote) ++counters_.commits;
    cursor = cursor_;
  }
  for (auto& callback : woken) callback(true);

  uint64_t ok_pushes = 0;
  for (size_t i = 0; i < pushes.size(); ++i) {
    if (!built.results[i].ok()) {
      pushes[i].done(built.results[i].status());
    } else {
      built.results[i]->cursor = cursor;
      ++ok_pushes;
      pushes[i].done(std::move(built.results[i]));
    }
  }
  MutexLock lock(&mu_);
  counters_.pushes += ok_pushes;
}

Status SyncEngine::CatchUp() {
  uint64_t after;
  {
    MutexLock lock(&mu_);
    after = scanned_;
  }
  SKIFF_ASSIGN_OR_RETURN(auto by_group, store_.LastSyncIdByGroupSince(after));
  std::vector<WaitRegistry::Callback> woken;
  {
    MutexLock lock(&mu_);
    // Cluster commits are gap-free in commit order: what a read sees is
    // every change up to its highest id.
    uint64_t top = after;
    for (const auto& [group, id] : by_group) top = std::max(top, id);
    cursor_ = std::max(cursor_, top);
    scanned_ = std::max(scanned_, top);
    woken = AdvanceGroups(by_group);
    ++counters_.catch_ups;
  }
  for (auto& callback : woken) callback(true);
  return Status::Ok();
}

void SyncEngine::FeedLoop() {
  using Steady = std::chrono::steady_clock;
  constexpr std::chrono::milliseconds kRetryAfter(500);
  auto next_poll = Steady::now() + options_.poll_interval;
  bool failing = false;
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
    }
    const auto left =
        std::clamp(std::chrono::ceil<std::chrono::milliseconds>(next_poll - Steady::now()),
                   std::chrono::milliseconds(0), options_.poll_interval);
    Result<store::ChangeListener::Event> event = listener_->Wait(left);
    bool catch_up = Steady::now() >= next_poll;
    if (event.ok()) {
      if (failing) std::fprintf(stderr, "skiff sync: listening for other servers' commits again\n");
      failing = false;
      // A notification of a commit already seen (this engine's own, or one
      // a catch-up read) needs no read.
      bool news = event->new_session;
      if (event->notifications > 0) {
        MutexLock lock(&mu_);
        news = news || event->last_sync_id > scanned_;
      }
      catch_up = catch_up || news;
    } else {
      if (!failing) {
        std::fprintf(stderr, "skiff sync: %s; polling until it is back\n",
                     event.status().ToString().c_str());
      }
      failing = true;
      // Before trying to reconnect; Stop() cuts it short.
      MutexLock lock(&mu_);
      if (!stopping_) {
        feed_cv_.WaitFor(mu_, std::min(options_.poll_interval, kRetryAfter));
      }
    }
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (catch_up) {
      next_poll = Steady::now() + options_.poll_interval;
      if (Status s = CatchUp(); !s.ok()) {
        std::fprintf(stderr, "skiff sync: catching up on other servers' commits failed: %s\n",
                     s.ToString().c_str());
        // What it was to read may be what no notification will announce
        // again (a new session's backlog): try again soon.
        next_poll = Steady::now() + std::min(options_.poll_interval, kRetryAfter);
      }
    }
  }
}

Result<PullReply> SyncEngine::Pull(const Caller& caller, uint64_t since, size_t limit) {
  if (limit == 0 || limit > options_.max_page) {
    return BadRequest("limit must be between 1 and " + std::to_string(options_.max_page));
  }
  // Another server may have handed out a cursor this one has not caught up
  // on yet.
  if (options_.cluster && since > cursor()) SKIFF_RETURN_IF_ERROR(CatchUp());
  uint64_t committed;
  {
    MutexLock lock(&mu_);
    committed = cursor_;
  }
  if (since > committed) return BadRequest("cursor is ahead of the server: bootstrap again");
  SKIFF_ASSIGN_OR_RETURN(std::vector<store::Change> changes,
                         store_.ReadChanges(since, GroupsOf(caller), limit));
  PullReply reply;
  // Changes committed after `committed` was read wait for the next pull, so
  // the cursor handed out never passes the published one.
  bool cut = false;
  for (store::Change& c : changes) {
    if (c.sync_id > committed) {
      cut = true;
      break;
    }
    reply.changes.push_back(std::move(c));
  }
  reply.more = cut || changes.size() == limit;
  reply.cursor =
      reply.more ? (reply.changes.empty() ? since : reply.changes.back().sync_id) : committed;
  return reply;
}

Result<BootstrapReply> SyncEngine::Bootstrap(const Caller& caller,
                                             const store::SyncRowCursor& after, size_t limit) {
  if (limit == 0 || limit > options_.max_page) {
    return BadRequest("limit must be between 1 and " + std::to_string(options_.max_page));
  }
  BootstrapReply reply;
  {
    MutexLock lock(&mu_);
    reply.cursor = cursor_;  // read before the rows: later changes are pulled again
  }
  SKIFF_ASSIGN_OR_RETURN(store::SyncRowPage page,
                         store_.ScanSyncRows(GroupsOf(caller), after, limit));
  reply.rows = std::move(page.rows);
  reply.next = std::move(page.next);
  return reply;
}

SyncEngine::WaitId SyncEngine::Wait(const Caller& caller, uint64_t since,
                                    std::chrono::milliseconds timeout, WaitDone done) {
  if (timeout.count() < 0 || timeout > options_.max_wait) {
    done(BadRequest("timeout_ms must be between 0 and " +
                    std::to_string(options_.max_wait.count())));
    return 0;
  }
  if (options_.cluster && since > cursor()) {
    // As in Pull; a failed read leaves the cursor, and the answer, as they are.
    (void)CatchUp();
  }
  WaitReply now;
  {
    MutexLock lock(&mu_);
    if (stopping_) {
      now.cursor = cursor_;
    } else if (since > cursor_) {
      // Answered below, outside the lock.
      now.cursor = cursor_;
    } else {
      for (const std::string& group : GroupsOf(caller)) {
        auto it = group_last_.find(group);
        if (it != group_last_.end() && it->second > since) now.changed = true;
      }
      now.cursor = cursor_;
      if (!now.changed && timeout.count() > 0) {
        // The same lock guards group_last_ and the registry: no commit can
        // slip between the check above and this registration.
        auto shared_done = std::make_shared<WaitDone>(std::move(done));
        const WaitId id = waits_.Add(
            caller.groups ? caller.groups : std::make_shared<const std::vector<std::string>>(),
            clock_.Now() + timeout, [this, shared_done](bool changed) {
              WaitReply reply;
              reply.changed = changed;
              {
                MutexLock inner(&mu_);
                reply.cursor = cursor_;
              }
              (*shared_done)(reply);
            });
        counters_.waits_held = waits_.size();
        expiry_cv_.SignalAll();
        return id;
      }
      ++counters_.waits_answered_at_once;
    }
  }
  if (since > now.cursor) {
    done(BadRequest("cursor is ahead of the server: bootstrap again"));
  } else {
    done(now);
  }
  return 0;
}

void SyncEngine::CancelWait(WaitId id) {
  MutexLock lock(&mu_);
  waits_.Cancel(id);
  counters_.waits_held = waits_.size();
}

void SyncEngine::ExpireDueWaits() {
  std::vector<WaitRegistry::Callback> expired;
  {
    MutexLock lock(&mu_);
    expired = waits_.TakeExpired(clock_.Now());
    counters_.waits_expired += expired.size();
    counters_.waits_held = waits_.size();
  }
  for (auto& callback : expired) callback(false);
}

void SyncEngine::ExpiryLoop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    // Sleep until the next deadline, re-checking at least every 50 ms so a
    // clock that is not the system's still moves expiry along.
    auto wait_for = std::chrono::milliseconds(50);
    if (auto next = waits_.NextDeadline()) {
      // Rounded up: rounding down would wake early and spin until the deadline.
      auto remaining = std::chrono::ceil<std::chrono::milliseconds>(*next - clock_.Now());
      wait_for = std::clamp(remaining, std::chrono::milliseconds(0), wait_for);
    }
    expiry_cv_.WaitFor(mu_, wait_for);
    if (stopping_) break;
    lock.Unlock();
    ExpireDueWaits();
    lock.Lock();
  }
}

uint64_t SyncEngine::cursor() const {
  MutexLock lock(&mu_);
  return cursor_;
}

SyncCounters SyncEngine::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

}  // namespace skiff::sync
