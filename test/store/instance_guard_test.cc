// One server per database: a second exclusive open of the same SQLite file
// or PostgreSQL schema is refused with a message naming the holder; a
// shared open (the admin CLI's) works beside it; and a PostgreSQL store
// whose lock was taken over while it was disconnected fails its calls
// instead of serving as a second owner.
#include <string>

#include <unistd.h>

#include "store/store.h"
#include "support/temp_dir.h"

#include "test/store/store_test_util.h"

namespace skiff::store {
namespace {

OpenOptions Shared() {
  OpenOptions o;
  o.exclusive = false;
  return o;
}

TEST(SqliteInstanceGuardTest, SecondExclusiveOpenIsRefusedNamingTheHolder) {
  support::TempDir dir;
  const std::string url = "sqlite:" + dir.File("s.db");
  auto first = OpenStore(url);
  ASSERT_OK(first);
  ASSERT_OK((*first)->Put("docs", "a", "1"));

  auto second = OpenStore(url);
  EXPECT_STATUS(second, kUnavailable);
  const std::string message = second.status().message();
  EXPECT_NE(message.find("in use by another server"), std::string::npos) << message;
  EXPECT_NE(message.find("process " + std::to_string(getpid())), std::string::npos) << message;

  // The admin CLI's open shares the file with the server.
  auto shared = OpenStore(url, Shared());
  ASSERT_OK(shared);
  EXPECT_EQ(*(*shared)->Get("docs", "a"), "1");
  ASSERT_OK((*shared)->Put("$users", "u", "{}"));
  EXPECT_EQ(*(*first)->Get("$users", "u"), "{}");

  // Closing the holder frees the file.
  first->reset();
  auto third = OpenStore(url);
  ASSERT_OK(third);
  EXPECT_EQ(*(*third)->Get("docs", "a"), "1");
}

class PostgresInstanceGuardTest : public testing::Test {
 protected:
  void SetUp() override { test::OpenOrSkip("postgres", &fixture_); }

  int KillBackends() { return test::KillStoreBackends(*fixture_); }

  std::unique_ptr<support::TestStore> fixture_;
};

TEST_F(PostgresInstanceGuardTest, SecondExclusiveOpenIsRefusedNamingTheHolder) {
  if (!fixture_) return;
  // The fixture's store holds the lock (TestStore opens exclusively).
  ASSERT_OK(fixture_->store().Put("docs", "a", "1"));
  auto second = OpenStore(fixture_->url());
  EXPECT_STATUS(second, kUnavailable);
  const std::string message = second.status().message();
  EXPECT_NE(message.find("in use by another server"), std::string::npos) << message;
  EXPECT_NE(message.find("PostgreSQL backend"), std::string::npos) << message;

  auto shared = OpenStore(fixture_->url(), Shared());
  ASSERT_OK(shared);
  EXPECT_EQ(*(*shared)->Get("docs", "a"), "1");
  ASSERT_OK((*shared)->Put("$users", "u", "{}"));
}

TEST_F(PostgresInstanceGuardTest, OtherSchemasAreOtherDatabases) {
  if (!fixture_) return;
  std::unique_ptr<support::TestStore> other;
  test::OpenOrSkip("postgres", &other);
  ASSERT_TRUE(other);  // its own schema: its own lock
  ASSERT_OK(other->store().Put("docs", "b", "2"));
}

TEST_F(PostgresInstanceGuardTest, AReconnectThatFindsTheLockTakenFailsInsteadOfSharing) {
  if (!fixture_) return;
  Store& first = fixture_->store();
  ASSERT_OK(first.Put("docs", "a", "1"));
  ASSERT_EQ(KillBackends(), 1);
  // While the first store is disconnected, another server takes the lock.
  auto second = OpenStore(fixture_->url());
  ASSERT_OK(second);
  ASSERT_OK((*second)->Put("docs", "a", "2"));
  // The first store's calls now fail, saying why; none is served.
  for (int i = 0; i < 3; ++i) {
    auto read = first.Get("docs", "a");
    ASSERT_FALSE(read.ok()) << "served " << read->value_or("(none)") << " as a second owner";
    EXPECT_EQ(read.status().code(), StatusCode::kUnavailable);
  }
  EXPECT_NE(first.Get("docs", "a").status().message().find("in use by another server"),
            std::string::npos);
  EXPECT_STATUS(first.Put("docs", "a", "3"), kUnavailable);
  // Once the other server is gone, the first one serves again.
  second->reset();
  auto read = first.Get("docs", "a");
  ASSERT_OK(read);
  EXPECT_EQ(*read, "2");
}

}  // namespace
}  // namespace skiff::store
