// One server per database: a second exclusive open of the same SQLite file
// or PostgreSQL schema is refused with a message naming the holder; a
// shared open (the admin CLI's) works beside it; and a PostgreSQL store
// whose lock was taken over while it was disconnected fails its calls
// instead of serving as a second owner. Cluster mode: PostgreSQL stores
// opened in it share the lock, refuse and are refused by a server not in
// it; SQLite and memory refuse cluster mode.
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

OpenOptions Cluster() {
  OpenOptions o;
  o.cluster = true;
  return o;
}

TEST(ClusterModeTest, SqliteAndMemoryRefuseIt) {
  support::TempDir dir;
  for (const std::string& url : {"sqlite:" + dir.File("s.db"), std::string("memory:")}) {
    auto opened = OpenStore(url, Cluster());
    EXPECT_STATUS(opened, kBadRequest);
    EXPECT_NE(opened.status().message().find("cluster mode needs PostgreSQL"), std::string::npos)
        << opened.status().message();
  }
  // Nor does a store that is not PostgreSQL run a cluster sync commit.
  auto memory = NewMemoryStore();
  auto committed = memory->CommitSync({"d"}, [](uint64_t, const auto&, WriteBatch*) {});
  EXPECT_STATUS(committed, kBadRequest);
  EXPECT_STATUS(memory->NotifySync(1), kBadRequest);
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

TEST_F(PostgresInstanceGuardTest, ClusterInstancesShareTheLockAndRefuseAServerNotInClusterMode) {
  if (!fixture_) return;
  // Beside a server not in cluster mode (the fixture's store), a cluster
  // instance is refused, saying why.
  auto refused = OpenStore(fixture_->url(), Cluster());
  EXPECT_STATUS(refused, kUnavailable);
  EXPECT_NE(refused.status().message().find("in use by a server not in cluster mode"),
            std::string::npos)
      << refused.status().message();

  fixture_->Close();
  auto a = OpenStore(fixture_->url(), Cluster());
  ASSERT_OK(a);
  auto b = OpenStore(fixture_->url(), Cluster());
  ASSERT_OK(b);
  ASSERT_OK((*a)->Put("docs", "a", "1"));
  EXPECT_EQ(*(*b)->Get("docs", "a"), "1");

  // A server not in cluster mode is refused beside them, saying why.
  auto single = OpenStore(fixture_->url());
  EXPECT_STATUS(single, kUnavailable);
  const std::string message = single.status().message();
  EXPECT_NE(message.find("in use by servers in cluster mode"), std::string::npos) << message;
  EXPECT_NE(message.find("and 1 more"), std::string::npos) << message;
  // The admin CLI's open still works beside them.
  auto shared = OpenStore(fixture_->url(), Shared());
  ASSERT_OK(shared);
  ASSERT_OK((*shared)->Put("$users", "u", "{}"));

  // Once the last cluster instance is gone, a single server may start.
  a->reset();
  EXPECT_STATUS(OpenStore(fixture_->url()), kUnavailable);
  b->reset();
  ASSERT_OK(OpenStore(fixture_->url()));
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
