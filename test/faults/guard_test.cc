// skiffd as processes around one store: a second skiffd on the same SQLite
// file or PostgreSQL schema exits non-zero saying why; the admin CLI works
// while skiffd runs; and skiffd started before its PostgreSQL waits for it,
// saying so, or gives up after --store-wait-s.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "client/client.h"
#include "server/users.h"
#include "store/store.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"

#include "test/store/private_postgres_util.h"
#include "test/store/store_test_util.h"

namespace skiff::testing {
namespace {

// Runs skiffd with `flags` to its end; its exit status, and in *output the
// first line it printed on stdout or stderr.
int RunSkiffd(const std::string& flags, std::string* output) {
  return support::RunCommand({"/bin/sh", "-c", std::string(SKIFFD_PATH) + " " + flags + " 2>&1"},
                             output);
}

void SecondServerIsRefused(const std::string& url) {
  support::SkiffdProcess first;
  ASSERT_OK(first.Start(SKIFFD_PATH, {"--store=" + url, "--io-threads=1"}));
  std::string output;
  const int rc = RunSkiffd("'--store=" + url + "' --port=0 --store-wait-s=0", &output);
  EXPECT_NE(rc, 0);
  EXPECT_NE(output.find("in use by another server"), std::string::npos) << output;
  EXPECT_NE(output.find("one skiffd per database"), std::string::npos) << output;
  // The first server was not disturbed, and once it is gone a new one starts.
  ASSERT_OK(first.Stop());
  support::SkiffdProcess next;
  EXPECT_OK(next.Start(SKIFFD_PATH, {"--store=" + url, "--io-threads=1"}));
}

TEST(GuardTest, SecondSkiffdOnOneSqliteFileExitsNonZero) {
  support::TempDir dir;
  SecondServerIsRefused("sqlite:" + dir.File("skiff.db"));
}

TEST(GuardTest, SecondSkiffdOnOnePostgresDatabaseExitsNonZero) {
  std::unique_ptr<support::TestStore> fixture;
  test::OpenOrSkip("postgres", &fixture);
  if (!fixture) return;
  fixture->Close();
  SecondServerIsRefused(fixture->url());
}

TEST(GuardTest, AdminCliWorksWhileSkiffdRuns) {
  support::TempDir dir;
  const std::string url = "sqlite:" + dir.File("skiff.db");
  support::SkiffdProcess skiffd;
  ASSERT_OK(skiffd.Start(SKIFFD_PATH, {"--store=" + url, "--io-threads=1"}));
  std::string secret;
  ASSERT_EQ(support::RunCommand(
                {SKIFF_PATH, "--store", url, "user", "add", "dana", "--read", "*", "--write", "*"},
                &secret),
            0);
  client::ClientOptions o;
  o.port = skiffd.port();
  o.user = "dana";
  o.secret = secret;
  auto c = client::Client::Connect(o);
  ASSERT_OK(c);
  EXPECT_OK((*c)->Set("notes", "n", "hi"));
  EXPECT_EQ(support::RunCommand({SKIFF_PATH, "--store", url, "user", "delete", "dana"}), 0);
}

class PostgresStartTest : public ::testing::Test {
 protected:
  void SetUp() override { test::StartPrivatePostgresOrSkip(&pg_); }
  std::unique_ptr<support::PrivatePostgres> pg_;
};

TEST_F(PostgresStartTest, SkiffdWaitsForAPostgresStartedAfterIt) {
  if (!pg_) return;
  ASSERT_OK(pg_->Stop("fast"));
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    EXPECT_OK(pg_->Restart());
  });
  support::SkiffdProcess skiffd;
  Status started = skiffd.Start(SKIFFD_PATH, {"--store=" + pg_->url(), "--store-wait-s=120"},
                                std::chrono::seconds(150));
  later.join();
  ASSERT_OK(started);
  client::ClientOptions o;
  o.port = skiffd.port();
  auto c = client::Client::Connect(o);
  ASSERT_OK(c);
  EXPECT_OK((*c)->Ping());
  EXPECT_OK(skiffd.Stop());
}

TEST_F(PostgresStartTest, SkiffdSaysWhatItWaitsForThenGivesUp) {
  if (!pg_) return;
  ASSERT_OK(pg_->Stop("fast"));
  std::string output;
  const int rc = RunSkiffd("'--store=" + pg_->url() + "' --port=0 --store-wait-s=1", &output);
  EXPECT_NE(rc, 0);
  EXPECT_NE(output.find("waiting for the store"), std::string::npos) << output;
  // Without waiting, the failure is immediate and says why.
  const int now = RunSkiffd("'--store=" + pg_->url() + "' --port=0 --store-wait-s=0", &output);
  EXPECT_NE(now, 0);
  EXPECT_NE(output.find("cannot open PostgreSQL store"), std::string::npos) << output;
}

}  // namespace
}  // namespace skiff::testing
