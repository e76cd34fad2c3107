// PeerLinks: this instance's connections to the other instances of its
// cluster, over which requests on partitions they own are relayed.
//
// One WebSocket connection per peer (the src/ws framing and handshake),
// logged in as the cluster's internal user, so requests relayed to one
// owner leave in the order they were sent and per-key order holds. A link
// lives on one of the server's I/O loops, like the connections it relays
// for: no thread of its own, and a request's text is relayed as it came
// with only its id rewritten (relay_frame.h). Links open and close as the
// ownership table reports peers coming and going; a link that fails is
// opened again shortly while its peer is alive.
// Thread-safe: every method may be called from any thread; a link's socket
// and its requests waiting for replies are touched only on its loop.
#ifndef SKIFF_SERVER_CLUSTER_PEER_LINKS_H_
#define SKIFF_SERVER_CLUSTER_PEER_LINKS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/logger.h"

namespace skiff::server::internal {
class IoLoop;
}  // namespace skiff::server::internal

namespace skiff::server::cluster {

// The user name internal links log in as; no stored user can have it
// (names starting with '$' are the server's).
inline constexpr const char* kClusterUser = "$cluster";

// How links reach peers that serve wss:// (every instance of a cluster
// serves the same scheme).
struct PeerTls {
  bool enabled = false;
  // PEM roots the peers' certificates must chain to; empty = the system
  // store. The peer's certificate must name the host of its address.
  std::string ca_file;
};

class PeerLinks {
 public:
  // What became of a relayed request.
  enum class Outcome {
    kReplied,  // the peer answered: the reply's text, under the link's id
    kNotSent,  // the link closed before the request left: the peer never saw it
    kLost,     // the link failed after it left: the peer may or may not have run it
  };
  // Runs once, on the link's loop; `reply` is valid only during the call.
  using Done = std::function<void(Outcome, std::string_view reply)>;
  enum class SendResult { kSent, kNoLink, kUnreadable };

  // `logger` must outlive the links.
  PeerLinks(std::string secret, Logger& logger, PeerTls tls = {});
  ~PeerLinks();  // Stop()
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  // The loops links are opened on (dealt out in turn), before the first
  // Update; they must run until Stop has returned.
  void Start(std::vector<internal::IoLoop*> loops);
  // The live peers by id, with their host:port: links to new ones open,
  // links to those gone close (what waits on them is lost).
  void Update(const std::map<uint64_t, std::string>& peers);
  // Relays the request frame `text` (a JSON object) to peer `owner` under
  // an id of the link's. kNoLink when there is no open link to it yet,
  // kUnreadable when `text` is not an object; `done` runs only after kSent.
  SendResult Send(uint64_t owner, std::string_view text, Done done);
  // Closes every link (what waits on them is lost) and opens no more.
  // Idempotent.
  void Stop();

 private:
  class Link;
  struct Registry;
  const std::shared_ptr<Registry> registry_;
};

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_PEER_LINKS_H_
