#include "server/cluster/peer_links.h"

#include <cstdio>
#include <utility>

namespace skiff::server::cluster {

PeerLinks::PeerLinks(std::string secret) : secret_(std::move(secret)) {
  connector_ = std::thread([this] { ConnectLoop(); });
  timer_ = std::thread([this] { TimerLoop(); });
}

PeerLinks::~PeerLinks() { Stop(); }

void PeerLinks::Update(const std::map<uint64_t, std::string>& peers) {
  MutexLock lock(&mu_);
  wanted_ = peers;
  connect_cv_.SignalAll();
}

bool PeerLinks::Send(uint64_t owner, const doc::Value& request, client::ReplyCallback done) {
  std::shared_ptr<client::Client> link;
  {
    MutexLock lock(&mu_);
    auto it = links_.find(owner);
    if (it == links_.end()) return false;
    link = it->second;
  }
  link->Call(request, std::move(done));
  return true;
}

void PeerLinks::After(std::chrono::milliseconds delay, std::function<void()> fn) {
  MutexLock lock(&mu_);
  // A multimap keeps equal keys in insertion order.
  timers_.emplace(std::chrono::steady_clock::now() + delay, std::move(fn));
  timer_cv_.SignalAll();
}

void PeerLinks::ConnectLoop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    // Close links to peers that went away; open the missing ones, one at a
    // time and without the lock (connecting blocks).
    // A peer leaves the list once it is dead, or once it has given its
    // partitions back and every peer has routed away from it (Ownership::
    // Stop waits for that), so nothing is left to answer on its link: what
    // is still queued there fails at once rather than at its timeout.
    for (auto it = links_.begin(); it != links_.end();) {
      it = wanted_.count(it->first) ? std::next(it) : links_.erase(it);
    }
    std::optional<std::pair<uint64_t, std::string>> missing;
    for (const auto& [id, address] : wanted_) {
      if (!links_.count(id)) {
        missing.emplace(id, address);
        break;
      }
    }
    if (!missing) {
      connect_cv_.Wait(mu_);
      continue;
    }
    client::ClientOptions o;
    const size_t colon = missing->second.rfind(':');
    o.host = missing->second.substr(0, colon);
    o.port = static_cast<uint16_t>(std::stoi(missing->second.substr(colon + 1)));
    o.connections = 1;  // one ordered stream per peer
    o.max_in_flight = 1024;
    o.user = kClusterUser;
    o.secret = secret_;
    o.connect_timeout = std::chrono::seconds(2);
    mu_.Unlock();
    auto link = client::Client::Connect(o);
    mu_.Lock();
    if (link.ok()) {
      if (wanted_.count(missing->first)) links_[missing->first] = std::move(*link);
    } else {
      std::fprintf(stderr, "skiffd: cluster: no link to instance %llu at %s yet: %s\n",
                   static_cast<unsigned long long>(missing->first), missing->second.c_str(),
                   link.status().message().c_str());
      connect_cv_.WaitFor(mu_, std::chrono::milliseconds(200));
    }
  }
}

void PeerLinks::TimerLoop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (timers_.empty()) {
      timer_cv_.Wait(mu_);
      continue;
    }
    auto first = timers_.begin();
    if (first->first > std::chrono::steady_clock::now()) {
      timer_cv_.WaitUntil(mu_, first->first);
      continue;
    }
    std::function<void()> fn = std::move(first->second);
    timers_.erase(first);
    mu_.Unlock();
    fn();
    mu_.Lock();
  }
}

void PeerLinks::Stop() {
  std::map<uint64_t, std::shared_ptr<client::Client>> links;
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    connect_cv_.SignalAll();
    timer_cv_.SignalAll();
    links.swap(links_);
  }
  if (connector_.joinable()) connector_.join();
  if (timer_.joinable()) timer_.join();
  for (auto& [id, link] : links) link->Shutdown();
  // Timers not run: their requests are answered by the connections'
  // close at the server's stop.
}

}  // namespace skiff::server::cluster
