// An in-process server on a real SQLite file (test/server/server_fixture.h)
// plus sync users: each user created with a secret and granted groups, and
// helpers that open devices and raw clients for them. Not thread-safe: drive
// it from the test's main thread.
#ifndef SKIFF_TEST_SYNC_E2E_SYNC_FIXTURE_H_
#define SKIFF_TEST_SYNC_E2E_SYNC_FIXTURE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/device.h"

#include "test/server/server_fixture.h"
#include "test/status_matchers.h"

namespace skiff::testing {

class SyncFixture : public ServerFixture {
 protected:
  // Creates `user` (no table permissions) in `groups`, creating groups that
  // do not exist yet.
  void AddUser(const std::string& user, const std::vector<std::string>& groups) {
    Result<std::string> secret = server::CreateUser(*store_, user, server::Permissions());
    ASSERT_OK(secret);
    secrets_[user] = *secret;
    for (const std::string& g : groups) {
      (void)server::CreateGroup(*store_, g);  // may exist already
      Status granted = server::GrantGroup(*store_, user, g);
      ASSERT_OK(granted);
    }
  }

  client::DeviceOptions DeviceFor(const std::string& user, const std::string& device_id) {
    client::DeviceOptions o;
    o.port = server_->port();
    o.user = user;
    o.secret = secrets_[user];
    o.device_id = device_id;
    o.backoff_min = std::chrono::milliseconds(10);
    o.backoff_max = std::chrono::milliseconds(200);
    return o;
  }

  client::Client& ClientFor(const std::string& user) {
    return Connect(ClientOptionsFor(user, secrets_[user]));
  }

  std::map<std::string, std::string> secrets_;
};

}  // namespace skiff::testing

#endif  // SKIFF_TEST_SYNC_E2E_SYNC_FIXTURE_H_
