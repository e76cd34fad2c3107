// PostgresStore reads its deadlines from the Clock it was opened with: a call
// blocked in PostgreSQL ends when that clock passes call_timeout, whatever
// the server's own timeouts say, and its outcome is then checked.
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "base/clock.h"
#include "store/postgres_store.h"

#include "test/store/store_test_util.h"

namespace skiff::store {
namespace {

class PostgresClockTest : public testing::Test {
 protected:
  void SetUp() override { test::OpenOrSkip("postgres", &fixture_); }

  // Whether a backend of this schema's stores waits for a lock.
  bool SomeoneWaitsForALock() {
    pqxx::connection admin(fixture_->pg_admin_url());
    pqxx::nontransaction tx(admin);
    return tx.exec_params(
                 "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 "
                 "AND wait_event_type = 'Lock'",
                 fixture_->pg_schema())[0][0]
               .as<int>() > 0;
  }

  std::unique_ptr<support::TestStore> fixture_;
};

TEST_F(PostgresClockTest, ABlockedWriteEndsWhenItsClockPassesTheCallTimeout) {
  if (!fixture_) return;
  ASSERT_OK(fixture_->store().Put("notes", "a", "1"));
  ManualClock clock;
  PostgresOptions options;
  options.exclusive = false;  // beside the fixture's store
  // Every deadline far away in real time: only the store's clock moving
  // past call_timeout can end the wait below.
  options.statement_timeout = std::chrono::minutes(10);
  options.lock_timeout = std::chrono::minutes(10);
  options.call_timeout = std::chrono::minutes(10);
  auto opened = OpenPostgresStore(fixture_->url(), options, clock);
  ASSERT_OK(opened);
  Store& store = **opened;

  // Another session holds the row, so the write blocks in PostgreSQL.
  pqxx::connection holder(fixture_->url());
  pqxx::work lock(holder);
  lock.exec("SELECT 1 FROM skiff_documents WHERE tbl = 'notes' AND key = 'a' FOR UPDATE");
  Status written;
  std::thread writer([&] { written = store.Put("notes", "a", "2"); });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!SomeoneWaitsForALock() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const bool blocked = SomeoneWaitsForALock();
  if (blocked) {
    // Past the deadline on the store's clock (real time has barely moved).
    clock.Advance(options.call_timeout + std::chrono::milliseconds(1));
  } else {
    lock.abort();  // lets the writer finish, so the test can end
  }
  writer.join();
  ASSERT_TRUE(blocked);
  // The write's statement was sent: the store reconnected, ended the old
  // backend and found its commit mark not written.
  EXPECT_STATUS(written, kUnavailable);
  EXPECT_NE(written.message().find("nothing was applied"), std::string::npos) << written.message();
  lock.abort();

  auto value = store.Get("notes", "a");
  ASSERT_OK(value);
  EXPECT_EQ(*value, "1");
  ASSERT_OK(store.Put("notes", "a", "3"));
  EXPECT_EQ(store.counters().transactions, 1u);
}

}  // namespace
}  // namespace skiff::store
