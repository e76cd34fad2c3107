#include "sync/sync_engine.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>

#include "doc/names.h"
#include "sync/local_sync_log.h"

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

SyncEngine::SyncEngine(store::Store& store, const Clock& clock, SyncOptions options,
                       std::unique_ptr<SyncLog> log)
    : store_(store),
      clock_(clock),
      options_(options),
      logger_(options.logger != nullptr ? *options.logger : stderr_logger_),
      log_(std::move(log)) {}

Result<std::unique_ptr<SyncEngine>> SyncEngine::Start(store::Store& store, const Clock& clock,
                                                      SyncOptions options,
                                                      std::unique_ptr<SyncLog> log) {
  if (!log) log = std::make_unique<LocalSyncLog>(store);
  std::unique_ptr<SyncEngine> engine(new SyncEngine(store, clock, options, std::move(log)));
  SKIFF_ASSIGN_OR_RETURN(uint64_t last, store.LastSyncId());
  SKIFF_ASSIGN_OR_RETURN(auto by_group, store.LastSyncIdByGroup());
  {
    // No other thread sees the engine yet; the lock is for the analysis.
    MutexLock lock(&engine->mu_);
    engine->cursor_ = last;
    engine->group_last_ = std::move(by_group);
  }
  engine->log_->Start(*engine, last);
  engine->committer_ = std::thread([e = engine.get()] { e->CommitLoop(); });
  if (options.expiry_thread) engine->expiry_ = std::thread([e = engine.get()] { e->ExpiryLoop(); });
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
  if (committer_.joinable()) committer_.join();  // commits what was queued first
  if (expiry_.joinable()) expiry_.join();
  // Before the held waits are answered: the log's threads wake none after.
  log_->Stop();
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

// Builds the batch in queue order, numbering changes as it goes.
void SyncEngine::BuildBatch(std::vector<QueuedPush>& pushes, const SyncLog::DeviceLookup& lookup,
                            SyncBatch* built) {
  for (QueuedPush& push : pushes) {
    const std::string& device = push.request.device;
    DeviceState state;
    if (auto t = built->touched_devices.find(device); t != built->touched_devices.end()) {
      state = t->second;
    } else {
      Result<std::optional<DeviceState>> found = lookup(device);
      if (!found.ok()) {
        built->results.push_back(PushCommitError(found.status()));
        continue;
      }
      // A device never seen is the caller's.
      state = found->has_value() ? std::move(**found) : DeviceState{push.caller.user, 0};
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

void SyncEngine::CommitQueued(std::vector<QueuedPush>& pushes) {
  if (Status s = log_->Prepare(); !s.ok()) {
    for (QueuedPush& push : pushes) push.done(PushCommitError(s));
    return;
  }
  std::set<std::string> unique;
  for (const QueuedPush& push : pushes) unique.insert(push.request.device);
  SyncBatch built;
  Result<uint64_t> last = log_->Commit(
      {unique.begin(), unique.end()},
      [&pushes](uint64_t first_id, const SyncLog::DeviceLookup& lookup, SyncBatch* batch) {
        *batch = SyncBatch();
        batch->first_id = batch->next_id = first_id;
        BuildBatch(pushes, lookup, batch);
      },
      &built);
  if (!last.ok()) {
    Logf(logger_, LogLevel::kError, "sync", "commit of %zu pushes failed: %s", pushes.size(),
         last.status().ToString().c_str());
    // Whatever the store says, the log publishes what landed before
    // anything is numbered again: an outcome_unknown commit may have. The
    // store's answer, not the cursor, says whether ours did: a cursor that
    // moved by as many ids as this batch held may be another writer's commit.
    log_->Failed();
    if (!RetryAlone(pushes, last.status())) {
      if (built.results.size() != pushes.size()) built.results.clear();  // never built
      AnswerFailed(pushes, built, last.status());
    }
    return;
  }
  Publish(pushes, built, *last);
  log_->Committed(built, *last);
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

void SyncEngine::AnswerFailed(std::vector<QueuedPush>& pushes, const SyncBatch& built,
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

void SyncEngine::Publish(std::vector<QueuedPush>& pushes, SyncBatch& built, uint64_t last) {
  std::vector<WaitRegistry::Callback> woken;
  uint64_t cursor;
  {
    MutexLock lock(&mu_);
    cursor_ = std::max(cursor_, last);
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

void SyncEngine::Advance(uint64_t last, const std::map<std::string, uint64_t>& groups) {
  std::vector<WaitRegistry::Callback> woken;
  {
    MutexLock lock(&mu_);
    cursor_ = std::max(cursor_, last);
    woken = AdvanceGroups(groups);
  }
  for (auto& callback : woken) callback(true);
}

Result<PullReply> SyncEngine::Pull(const Caller& caller, uint64_t since, size_t limit) {
  if (limit == 0 || limit > options_.max_page) {
    return BadRequest("limit must be between 1 and " + std::to_string(options_.max_page));
  }
  // Another server may have handed out a cursor this one has not caught up
  // on yet.
  if (since > cursor()) SKIFF_RETURN_IF_ERROR(log_->CatchUp());
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
  if (since > cursor()) {
    // As in Pull; a failed read leaves the cursor, and the answer, as they are.
    (void)log_->CatchUp();
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
  SyncCounters counters;
  {
    MutexLock lock(&mu_);
    counters = counters_;
  }
  counters.catch_ups = log_->catch_ups();
  return counters;
}

}  // namespace skiff::sync
