// skiffd under load while its PostgreSQL (a cluster of the test's own) is
// stopped fast or immediately, frozen with SIGSTOP, or has a table locked
// by another session: writes fail with a clear store error instead of
// hanging or succeeding falsely, skiffd recovers without a restart when the
// fault ends, and nothing acknowledged is lost.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "test/faults/fault_fixture.h"
#include "test/store/private_postgres_util.h"

namespace skiff::testing {
namespace {

using namespace std::chrono_literals;

class PostgresFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::StartPrivatePostgresOrSkip(&pg_);
    if (!pg_) return;
    // Short store deadlines, so the faulted calls end soon.
    ASSERT_OK(server_.Start(
        pg_->url() + "?statement_timeout_ms=1500&lock_timeout_ms=1000&call_timeout_ms=3000"));
    auto c = server_.Connect();
    ASSERT_OK(c);
    client_ = std::move(*c);
    // Load that runs through the fault and books what is acknowledged.
    load_ = std::thread([this] {
      for (int i = 0; !stop_; ++i) {
        Status s = server_.Set(*client_, "load" + std::to_string(i), i);
        if (!s.ok()) {
          ++load_errors_;
          if (!IsStoreError(s)) unclear_ = s.ToString();
          std::this_thread::sleep_for(10ms);
        }
      }
    });
  }
  void TearDown() override {
    stop_ = true;
    if (load_.joinable()) load_.join();
  }

  // Writes until one fails with a store error: the fault is seen. Bounded.
  void ExpectWritesFail(const std::string& what) {
    for (int i = 0; i < 200; ++i) {
      Status s = client_->Set("t", "probe", i);
      if (!s.ok()) {
        EXPECT_TRUE(IsStoreError(s)) << what << ": " << s;
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << what << ": no write failed";
  }

  // Writes until one succeeds again, without restarting skiffd. Bounded.
  void ExpectRecovery(const std::string& what) {
    Status last;
    for (int i = 0; i < 300; ++i) {
      last = server_.Set(*client_, "after-" + what + std::to_string(i), i);
      if (last.ok()) return;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << what << ": skiffd did not recover: " << last;
  }

  void Finish() {
    stop_ = true;
    load_.join();
    EXPECT_GT(server_.acked(), 0u);
    EXPECT_EQ(unclear_, "") << "a failure that was not a store error";
    client_.reset();
    server_.StopAndVerify();
  }

  std::unique_ptr<support::PrivatePostgres> pg_;
  FaultServer server_;
  std::unique_ptr<client::Client> client_;
  std::thread load_;
  std::atomic<bool> stop_{false};
  std::atomic<int> load_errors_{0};
  std::string unclear_;
};

TEST_F(PostgresFaultsTest, StoppedFastThenStarted) {
  if (!pg_) return;
  std::this_thread::sleep_for(300ms);
  ASSERT_OK(pg_->Stop("fast"));
  ExpectWritesFail("stopped fast");
  ASSERT_OK(pg_->Restart());
  ExpectRecovery("fast");
  Finish();
}

TEST_F(PostgresFaultsTest, StoppedImmediatelyThenStarted) {
  if (!pg_) return;
  std::this_thread::sleep_for(300ms);
  ASSERT_OK(pg_->Stop("immediate"));
  ExpectWritesFail("stopped immediately");
  ASSERT_OK(pg_->Restart());
  ExpectRecovery("immediate");
  Finish();
}

TEST_F(PostgresFaultsTest, FrozenThenThawed) {
  if (!pg_) return;
  std::this_thread::sleep_for(300ms);
  ASSERT_OK(pg_->Freeze());
  // A frozen server answers nothing; the store's call deadline ends the
  // writes with an error instead of holding them.
  ExpectWritesFail("frozen");
  ASSERT_OK(pg_->Thaw());
  ExpectRecovery("frozen");
  Finish();
}

TEST_F(PostgresFaultsTest, TableLockedByAnotherSession) {
  if (!pg_) return;
  std::this_thread::sleep_for(300ms);
  std::atomic<bool> release{false};
  std::atomic<bool> locked{false};
  std::thread holder([&] {
    pqxx::connection conn(pg_->url());
    pqxx::work tx(conn);
    tx.exec("LOCK TABLE skiff_documents IN ACCESS EXCLUSIVE MODE");
    locked = true;
    while (!release) std::this_thread::sleep_for(20ms);
    tx.abort();
  });
  while (!locked) std::this_thread::sleep_for(10ms);
  ExpectWritesFail("table locked");
  release = true;
  holder.join();
  ExpectRecovery("locked");
  Finish();
}

}  // namespace
}  // namespace skiff::testing
