// WatchFeed: what a cluster instance's watches see (docs/cluster.md, "watch
// across instances"). Every instance's fenced batches number their changes
// of watched tables from one counter in PostgreSQL and append them to the
// watch log, in the batch's own statement (Store::ReadWatchLog); the feed
// reads that log in version order and hands each change to the instance's
// WatchHub, which queues it for the watches it matches as a local change
// would be. So every instance delivers the same changes under the same
// versions, whoever wrote them, and a `since` taken on one instance resumes
// on another.
//
// A thread follows the log (store/channel_follower.h): at each notification
// on the watch channel (sent by the commit that logged the changes, so never
// before it and never lost by its sender) and after the LISTEN connection
// came back. Opening
// a watch first
// catches up synchronously (Follow), so the watch starts at the cluster's
// version, not at what this instance happened to have read.
//
// The log is trimmed to the last `retain` versions; an instance that fell
// further behind (a long stall) starts again from the head, and its open
// watches get a `resync` event rather than a silent gap.
//
// Thread-safety: Follow may be called from any thread; Stop once.
#ifndef SKIFF_SERVER_CLUSTER_WATCH_FEED_H_
#define SKIFF_SERVER_CLUSTER_WATCH_FEED_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/logger.h"
#include "base/mutex.h"
#include "base/status.h"
#include "server/internal/watch_hub.h"
#include "store/channel_follower.h"
#include "store/store.h"

namespace skiff::server::cluster {

struct WatchFeedOptions {
  // Opens the feed's LISTEN connection (the store's URL).
  std::string store_url;
  // The feed reads the log this often whatever the notifications do; 0
  // (the default) never: the commit that logs changes sends the NOTIFY
  // itself, so only a lost LISTEN connection can lose one, and the feed
  // reads the log when it comes back.
  std::chrono::milliseconds poll_interval{0};
  // Versions of the log kept in PostgreSQL behind the newest.
  uint64_t retain = 100000;
  Logger* logger = nullptr;  // must be set; outlives the feed
};

class WatchFeed {
 public:
  // Listens, reads the log's head and hands it to `hub` (in cluster mode),
  // then starts following. `store` and `hub` outlive the feed.
  static Result<std::unique_ptr<WatchFeed>> Start(store::Store& store, internal::WatchHub& hub,
                                                  WatchFeedOptions options);
  ~WatchFeed() = default;  // the follower stops first
  WatchFeed(const WatchFeed&) = delete;
  WatchFeed& operator=(const WatchFeed&) = delete;

  // Before a watch of `table` opens: makes the table watched across the
  // cluster and feeds the hub every change numbered up to now.
  Status Follow(const std::string& table);

  // Ends the thread; may wait for a reconnect in progress.
  void Stop() { follower_->Stop(); }

 private:
  WatchFeed(store::Store& store, internal::WatchHub& hub, WatchFeedOptions options);
  // Feeds the hub what the log holds after what was fed, at least up to
  // `until`, then delivers it.
  Status CatchUp(uint64_t until = 0);
  uint64_t fed() const;

  store::Store& store_;
  internal::WatchHub& hub_;
  const WatchFeedOptions options_;

  // One catch-up at a time (the thread's and Follow's), so changes are fed
  // in order.
  mutable Mutex read_mu_;
  uint64_t fed_ SKIFF_GUARDED_BY(read_mu_) = 0;      // the last version fed
  uint64_t trimmed_ SKIFF_GUARDED_BY(read_mu_) = 0;  // the log is let go up to here
  // Last: stopped and destroyed before what its thread uses.
  std::unique_ptr<store::ChannelFollower> follower_;
};

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_WATCH_FEED_H_
