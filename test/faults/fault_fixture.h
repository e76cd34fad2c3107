// What the fault tests share: a skiffd child process on a store with user
// "ops", a client that books every acknowledged write, and the check that
// the store holds them all once skiffd has stopped.
#ifndef SKIFF_TEST_FAULTS_FAULT_FIXTURE_H_
#define SKIFF_TEST_FAULTS_FAULT_FIXTURE_H_

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/client.h"
#include "server/users.h"
#include "store/store.h"
#include "support/skiffd_process.h"

#include "test/status_matchers.h"

namespace skiff::testing {

class FaultServer {
 public:
  // Creates user "ops" in the store at `url` and starts skiffd on it.
  Status Start(const std::string& url, std::vector<std::string> flags = {}) {
    url_ = url;
    {
      auto store = store::OpenStore(url);
      if (!store.ok()) return store.status();
      auto created = server::CreateUser(**store, "ops", server::Permissions({"*"}, {"*"}));
      if (!created.ok()) return created.status();
      secret_ = *created;
    }
    flags.push_back("--store=" + url);
    flags.push_back("--io-threads=1");
    return skiffd_.Start(SKIFFD_PATH, flags);
  }

  Result<std::unique_ptr<client::Client>> Connect(size_t connections = 2) const {
    client::ClientOptions o;
    o.port = skiffd_.port();
    o.user = "ops";
    o.secret = secret_;
    o.connections = connections;
    o.request_timeout = std::chrono::seconds(60);
    return client::Client::Connect(o);
  }

  // Sets `key` = `value`; books it when acknowledged. The reply's status.
  Status Set(client::Client& c, const std::string& key, int value) {
    Status s = c.Set("t", key, value);
    if (s.ok()) {
      std::lock_guard lock(mu_);
      acked_[key] = std::to_string(value);
    }
    return s;
  }
  size_t acked() const {
    std::lock_guard lock(mu_);
    return acked_.size();
  }

  // Stops skiffd (SIGTERM, exit 0 expected) and checks that the store holds
  // every acknowledged set.
  void StopAndVerify() {
    EXPECT_OK(skiffd_.Stop());
    auto store = store::OpenStore(url_);
    ASSERT_OK(store);
    std::lock_guard lock(mu_);
    size_t lost = 0;
    for (const auto& [key, value] : acked_) {
      auto got = (*store)->Get("t", key);
      ASSERT_OK(got);
      if (*got != value) ++lost;
    }
    EXPECT_EQ(lost, 0u) << "of " << acked_.size() << " acknowledged writes";
  }

  support::SkiffdProcess& process() { return skiffd_; }

 private:
  std::string url_;
  std::string secret_;
  support::SkiffdProcess skiffd_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> acked_;  // guarded by mu_
};

// True when `s` is an error the server gave about its store, not a client
// timeout or a lost connection.
inline bool IsStoreError(const Status& s) {
  return (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kOutcomeUnknown) &&
         (s.message().find("store") != std::string::npos ||
          s.message().find("PostgreSQL") != std::string::npos ||
          s.message().find("SQLite") != std::string::npos ||
          s.message().find("commit") != std::string::npos);
}

}  // namespace skiff::testing

#endif  // SKIFF_TEST_FAULTS_FAULT_FIXTURE_H_
