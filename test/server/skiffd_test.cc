// skiffd as a process: starts on an ephemeral port, serves, and on SIGTERM
// commits what it applied and exits 0.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client.h"
#include "server/users.h"
#include "store/store.h"

extern char** environ;

namespace skiff::testing {
namespace {

class SkiffdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "skiffd-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    url_ = "sqlite:" + (dir_ / "skiff.db").string();
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts `argv` with stdout on a pipe and returns its first line ("" when
  // it could not start or printed nothing).
  static std::string StartAndReadLine(const std::vector<std::string>& args, pid_t* pid) {
    int out[2];
    if (pipe(out) != 0) return "";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    int rc = posix_spawn(pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (rc != 0) {
      close(out[0]);
      *pid = -1;
      return "";
    }
    FILE* f = fdopen(out[0], "r");
    char line[512] = {0};
    std::string first = fgets(line, sizeof line, f) != nullptr ? line : "";
    fclose(f);
    return first;
  }

  // Starts skiffd with --port 0 and reads the port from its first line.
  uint16_t Spawn() {
    std::string line = StartAndReadLine(
        {SKIFFD_PATH, "--store=" + url_, "--port", "0", "--io-threads", "1"}, &pid_);
    size_t colon = line.rfind(':');
    if (colon == std::string::npos) return 0;
    return static_cast<uint16_t>(std::strtoul(line.c_str() + colon + 1, nullptr, 10));
  }

  std::filesystem::path dir_;
  std::string url_;
  pid_t pid_ = -1;
};

TEST_F(SkiffdTest, ServesAndStopsGracefullyOnSigterm) {
  std::string secret;
  {
    auto store = store::OpenStore(url_);
    ASSERT_TRUE(store.ok()) << store.status();
    auto created = server::CreateUser(**store, "ops", server::Permissions({"*"}, {"*"}));
    ASSERT_TRUE(created.ok()) << created.status();
    secret = *created;
  }
  uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  {
    client::ClientOptions o;
    o.port = port;
    o.user = "ops";
    o.secret = secret;
    auto c = client::Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_TRUE((*c)->Set("t", "k", {{"saved", true}}).ok());
    EXPECT_EQ(*(*c)->Add("t", "n", {}, 3), 3);
  }
  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);

  auto store = store::OpenStore(url_);
  ASSERT_TRUE(store.ok());
  auto k = (*store)->Get("t", "k");
  ASSERT_TRUE(k.ok() && k->has_value());
  EXPECT_EQ(**k, R"({"saved":true})");
  auto n = (*store)->Get("t", "n");
  ASSERT_TRUE(n.ok() && n->has_value());
  EXPECT_EQ(**n, "3");
}

TEST_F(SkiffdTest, AcknowledgedWritesSurviveKill9) {
  std::string secret;
  {
    auto store = store::OpenStore(url_);
    ASSERT_TRUE(store.ok()) << store.status();
    auto created = server::CreateUser(**store, "ops", server::Permissions({"*"}, {"*"}));
    ASSERT_TRUE(created.ok()) << created.status();
    secret = *created;
  }
  uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  constexpr int kWrites = 400;
  int acked_adds = 0;
  std::vector<int> acked_keys;
  {
    client::ClientOptions o;
    o.port = port;
    o.user = "ops";
    o.secret = secret;
    o.connections = 4;
    o.reconnect = false;  // after the kill, fail what is queued at once
    auto c = client::Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status();
    std::vector<std::future<client::Reply>> sets;
    std::vector<std::future<client::Reply>> adds;
    for (int i = 0; i < kWrites; ++i) {
      sets.push_back((*c)->Call(
          {{"op", "set"}, {"table", "t"}, {"key", "k" + std::to_string(i)}, {"value", i}}));
      adds.push_back((*c)->Call({{"op", "add"}, {"table", "t"}, {"key", "n"}, {"delta", 1}}));
      if (i == kWrites / 2) {
        // Kill while the second half is still in flight.
        for (int j = 0; j <= i; ++j) {
          if (sets[j].get().ok()) acked_keys.push_back(j);
          if (adds[j].get().ok()) ++acked_adds;
        }
        ASSERT_EQ(kill(pid_, SIGKILL), 0);
      }
    }
    for (int j = kWrites / 2 + 1; j < kWrites; ++j) {
      if (sets[j].get().ok()) acked_keys.push_back(j);
      if (adds[j].get().ok()) ++acked_adds;
    }
  }
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  ASSERT_GT(acked_adds, 0);
  auto store = store::OpenStore(url_);
  ASSERT_TRUE(store.ok());
  for (int key : acked_keys) {
    auto v = (*store)->Get("t", "k" + std::to_string(key));
    ASSERT_TRUE(v.ok() && v->has_value()) << "acknowledged write k" << key << " lost";
    EXPECT_EQ(**v, std::to_string(key));
  }
  auto n = (*store)->Get("t", "n");
  ASSERT_TRUE(n.ok() && n->has_value());
  // Every acknowledged add is in; unacknowledged ones may be too.
  EXPECT_GE(std::stoi(**n), acked_adds);
}

TEST_F(SkiffdTest, AdminCliCreatesAUserWhoCanLogIn) {
  pid_t admin = -1;
  std::string secret = StartAndReadLine(
      {SKIFF_PATH, "--store", url_, "user", "add", "carol", "--read", "notes", "--write", "notes"},
      &admin);
  int status = 0;
  ASSERT_EQ(waitpid(admin, &status, 0), admin);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  ASSERT_EQ(secret.size(), 64u) << secret;

  uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  client::ClientOptions o;
  o.port = port;
  o.user = "carol";
  o.secret = secret;
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE((*c)->Set("notes", "n1", "hello").ok());
  EXPECT_EQ((*c)->Get("other", "x").status().code(), StatusCode::kForbidden);

  // A second add of the same name fails without printing a secret.
  std::string again =
      StartAndReadLine({SKIFF_PATH, "--store", url_, "user", "add", "carol"}, &admin);
  ASSERT_EQ(waitpid(admin, &status, 0), admin);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  EXPECT_TRUE(again.empty()) << again;
}

}  // namespace
}  // namespace skiff::testing
