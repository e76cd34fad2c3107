// The server stays responsive while its store hangs: with PostgreSQL frozen
// and a store read in progress (a get of a key not in memory), a ping and a
// read of a document in memory are answered before that read's reply. On
// one I/O thread this needs store reads off the I/O thread: these cases
// fail until the server does that.
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "test/faults/fault_fixture.h"
#include "test/store/private_postgres_util.h"

namespace skiff::testing {
namespace {

using namespace std::chrono_literals;

class ResponsiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::StartPrivatePostgresOrSkip(&pg_);
    if (!pg_) return;
    // A long store deadline: the blocked read lasts while the checks run.
    ASSERT_OK(server_.Start(pg_->url() + "?call_timeout_ms=15000"));
    auto c = server_.Connect(1);
    ASSERT_OK(c);
    blocked_ = std::move(*c);
    auto other = server_.Connect(1);
    ASSERT_OK(other);
    other_ = std::move(*other);
    ASSERT_OK(server_.Set(*other_, "cached", 1));  // in memory from now on
  }
  void TearDown() override {
    if (pg_) (void)pg_->Thaw();
  }

  // Freezes PostgreSQL with a store read of an uncached key in flight.
  std::future<client::Reply> FreezeWithReadInFlight() {
    EXPECT_OK(pg_->Freeze());
    auto read = blocked_->Call({{"op", "get"}, {"table", "t"}, {"key", "not-in-memory"}});
    std::this_thread::sleep_for(200ms);  // let it reach the store
    return read;
  }

  std::unique_ptr<support::PrivatePostgres> pg_;
  FaultServer server_;
  std::unique_ptr<client::Client> blocked_;
  std::unique_ptr<client::Client> other_;
};

TEST_F(ResponsiveTest, PingIsAnsweredWhileTheStoreIsFrozen) {
  if (!pg_) return;
  auto read = FreezeWithReadInFlight();
  auto ping = other_->Call({{"op", "ping"}});
  ASSERT_EQ(ping.wait_for(60s), std::future_status::ready);
  EXPECT_OK(ping.get());
  EXPECT_EQ(read.wait_for(0s), std::future_status::timeout) << "the ping waited for the store read";
  ASSERT_OK(pg_->Thaw());
  (void)read.get();
}

TEST_F(ResponsiveTest, CachedReadIsAnsweredWhileTheStoreIsFrozen) {
  if (!pg_) return;
  auto read = FreezeWithReadInFlight();
  auto cached = other_->Call({{"op", "get"}, {"table", "t"}, {"key", "cached"}});
  ASSERT_EQ(cached.wait_for(60s), std::future_status::ready);
  EXPECT_OK(cached.get());
  EXPECT_EQ(read.wait_for(0s), std::future_status::timeout)
      << "the cached read waited for the store read";
  ASSERT_OK(pg_->Thaw());
  (void)read.get();
}

}  // namespace
}  // namespace skiff::testing
