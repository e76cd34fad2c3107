#include "server/internal/listener_shared.h"

namespace skiff::server::internal {

bool ListenerShared::Admit(const std::string& address_key, std::string* why) {
  if (connections.fetch_add(1, std::memory_order_relaxed) >= max_connections) {
    connections.fetch_sub(1, std::memory_order_relaxed);
    *why = "skiffd is at its limit of " + std::to_string(max_connections) +
           " connections; try again later\n";
    return false;
  }
  if (!address_key.empty()) {
    MutexLock lock(&address_mu_);
    size_t& n = per_address_[address_key];
    if (n >= options.max_connections_per_address) {
      if (n == 0) per_address_.erase(address_key);
      connections.fetch_sub(1, std::memory_order_relaxed);
      *why = "skiffd allows " + std::to_string(options.max_connections_per_address) +
             " connections per address; this address has them all\n";
      return false;
    }
    ++n;
  }
  return true;
}

void ListenerShared::Release(const std::string& address_key) {
  if (!address_key.empty()) {
    MutexLock lock(&address_mu_);
    auto it = per_address_.find(address_key);
    if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
  }
  connections.fetch_sub(1, std::memory_order_relaxed);
  MutexLock lock(&closed_mu);
  closed_cv.SignalAll();
}

}  // namespace skiff::server::internal
