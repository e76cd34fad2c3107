// PeerLinks: this instance's connections to the other instances of its
// cluster, over which requests for partitions they own are forwarded.
//
// One client connection per peer, logged in as the cluster's internal user,
// so requests forwarded to one owner leave in the order they were sent and
// per-key order holds. Links open and close on a thread of their own as the
// ownership table reports peers coming and going; a peer without a link yet
// is answered like a partition being handed over (retry shortly). Also
// runs short timers for those retries.
// Thread-safe.
#ifndef SKIFF_SERVER_CLUSTER_PEER_LINKS_H_
#define SKIFF_SERVER_CLUSTER_PEER_LINKS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "client/client.h"

namespace skiff::server::cluster {

// The user name internal links log in as; no stored user can have it
// (names starting with '$' are the server's).
inline constexpr const char* kClusterUser = "$cluster";

class PeerLinks {
 public:
  explicit PeerLinks(std::string secret);
  ~PeerLinks();  // Stop()
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  // The live peers by id, with their host:port.
  void Update(const std::map<uint64_t, std::string>& peers);
  // Sends `request` to peer `owner`; `done` runs on the link's thread.
  // False (and `done` never runs) when there is no open link to it.
  bool Send(uint64_t owner, const doc::Value& request, client::ReplyCallback done);
  // Runs `fn` on the timer thread after `delay`; timers due together run
  // in the order they were set.
  void After(std::chrono::milliseconds delay, std::function<void()> fn);
  void Stop();

 private:
  void ConnectLoop();
  void TimerLoop();

  const std::string secret_;
  Mutex mu_;
  CondVar connect_cv_;
  CondVar timer_cv_;
  std::map<uint64_t, std::string> wanted_ SKIFF_GUARDED_BY(mu_);
  std::map<uint64_t, std::shared_ptr<client::Client>> links_ SKIFF_GUARDED_BY(mu_);
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> timers_
      SKIFF_GUARDED_BY(mu_);
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  std::thread connector_;
  std::thread timer_;
};

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_PEER_LINKS_H_
