#include "server/cluster/watch_feed.h"

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace skiff::server::cluster {
namespace {

// Entries read per statement while catching up.
constexpr size_t kPage = 1000;

}  // namespace

WatchFeed::WatchFeed(store::Store& store, internal::WatchHub& hub, WatchFeedOptions options)
    : store_(store), hub_(hub), options_(std::move(options)) {}

Result<std::unique_ptr<WatchFeed>> WatchFeed::Start(store::Store& store, internal::WatchHub& hub,
                                                    WatchFeedOptions options) {
  std::unique_ptr<WatchFeed> feed(new WatchFeed(store, hub, std::move(options)));
  // Listening before the head is read: no commit after that read goes
  // unannounced.
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<store::ChangeListener> listener,
      store::ChangeListener::Open(feed->options_.store_url, store::kWatchChannelSql));
  SKIFF_ASSIGN_OR_RETURN(store::WatchLogHead head, store.ReadWatchLogHead());
  hub.FeedFrom(head.version, head.tables);
  {
    MutexLock lock(&feed->read_mu_);  // no other thread sees the feed yet
    feed->fed_ = head.version;
  }
  store::ChannelFollower::Hooks hooks;
  WatchFeed* f = feed.get();
  hooks.is_new = [f](uint64_t named) { return named > f->fed(); };
  hooks.read = [f] { return f->CatchUp(); };
  feed->follower_ = std::make_unique<store::ChannelFollower>(
      std::move(listener), feed->options_.poll_interval, *feed->options_.logger, "watch",
      "the cluster's watch log", std::move(hooks));
  feed->follower_->Start();
  return feed;
}

uint64_t WatchFeed::fed() const {
  MutexLock lock(&read_mu_);
  return fed_;
}

Status WatchFeed::Follow(const std::string& table) {
  SKIFF_ASSIGN_OR_RETURN(uint64_t at, store_.WatchTable(table));
  return CatchUp(at);
}

Status WatchFeed::CatchUp(uint64_t until) {
  MutexLock lock(&read_mu_);
  bool fed_any = false;
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(std::vector<store::WatchLogEntry> page,
                           store_.ReadWatchLog(fed_, kPage));
    // Versions are gap-free in commit order, and every version up to
    // `until` is committed: a missing one was trimmed before this instance
    // read it.
    const bool behind = page.empty() ? fed_ < until : page.front().version != fed_ + 1;
    if (behind) {
      SKIFF_ASSIGN_OR_RETURN(store::WatchLogHead head, store_.ReadWatchLogHead());
      Logf(*options_.logger, LogLevel::kWarning, "watch",
           "the watch log no longer holds version %llu (it keeps %llu): open watches resync "
           "from %llu",
           static_cast<unsigned long long>(fed_ + 1),
           static_cast<unsigned long long>(options_.retain),
           static_cast<unsigned long long>(head.version));
      hub_.FeedFrom(head.version, head.tables);
      fed_ = head.version;
      fed_any = true;
      continue;
    }
    for (const store::WatchLogEntry& e : page) {
      if (!e.key) {
        hub_.FeedRecorded(e.table, e.version);
      } else {
        hub_.FeedChange(e.version, e.table, *e.key,
                        e.value ? std::optional<std::string_view>(*e.value) : std::nullopt);
      }
      fed_ = e.version;
    }
    fed_any = fed_any || !page.empty();
    if (page.size() < kPage) break;
  }
  if (fed_any) hub_.Deliver();
  // Trimmed a tenth of `retain` at a time, by each instance (a trim another
  // one already made deletes nothing).
  if (fed_ > options_.retain && fed_ - options_.retain >= trimmed_ + options_.retain / 10) {
    if (Status s = store_.TrimWatchLog(fed_ - options_.retain); !s.ok()) {
      Logf(*options_.logger, LogLevel::kWarning, "watch", "trimming the watch log failed: %s",
           s.ToString().c_str());
    } else {
      trimmed_ = fed_ - options_.retain;
    }
  }
  return Status::Ok();
}

}  // namespace skiff::server::cluster
