// The server's batched sends (SendRing: one io_uring submission for a
// pass's sends to many connections) against the same server sending with
// one sendmsg each: watched changes reach every reading watcher complete
// and in order while one watcher never reads, its socket fills, and its
// sends in each batch come back short or refused (-EAGAIN), until its
// queue overflows. Run with io_uring on and off; with it on, the stats
// show the sends went through the ring, several per system call.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/internal/send_ring.h"

#include "test/server/raw_socket.h"
#include "test/server/server_fixture.h"
#include "test/server/watch_events.h"
#include "test/server/ws_peer.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

constexpr int kReaders = 6;

class BatchedSendTest : public ServerFixture, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    options_.io_uring = GetParam();
    options_.watch_coalesce_bytes = 16 * 1024;
    options_.watch_queue_bytes = 128 * 1024;
    ServerFixture::SetUp();
  }
};

TEST_P(BatchedSendTest, ReadersGetEveryChangeInOrderBesideAWatcherThatNeverReads) {
  // The watcher that never reads, with a small receive buffer so that its
  // socket fills soon.
  WsPeer stalled;
  stalled.set_receive_buffer(4096);
  ASSERT_TRUE(stalled.Open(server_->port()));
  ASSERT_TRUE(stalled.SendText(R"({"id":1,"op":"login","user":"alice","secret":")" + alice_secret_ +
                               R"("})"));
  ASSERT_TRUE(stalled.NextText().has_value());
  ASSERT_TRUE(stalled.SendText(R"({"id":2,"op":"watch","table":"b"})"));
  auto opened = stalled.NextText();
  ASSERT_TRUE(opened && opened->find("\"ok\":true") != std::string::npos) << *opened;

  // Readers spread over both I/O loops (connections are dealt in turn).
  std::vector<std::unique_ptr<RawSocket>> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.push_back(std::make_unique<RawSocket>(server_->port()));
    RawSocket& raw = *readers.back();
    ASSERT_TRUE(raw.WaitOpen());
    auto login =
        raw.Exchange(R"({"id":1,"op":"login","user":"alice","secret":")" + alice_secret_ + R"("})");
    ASSERT_TRUE(login && (*login)["ok"] == true);
    auto watch = raw.Exchange(R"({"id":2,"op":"watch","table":"b"})");
    ASSERT_TRUE(watch && (*watch)["ok"] == true) << (watch ? watch->dump() : "no reply");
  }

  // Distinct keys, so nothing coalesces: once the stalled socket and the
  // kernel's buffers are full its queue reaches its bound and its watch
  // ends. Bounded in writes, not in time.
  client::Client& writer = Alice();
  const std::string pad(2000, 'p');
  int writes = 0;
  doc::Value stats;
  for (; writes < 20000; ++writes) {
    ASSERT_OK(writer.Set("b", "k" + std::to_string(writes), doc::Value{{"n", writes}, {"p", pad}}));
    if (writes % 50 == 49) {
      auto s = writer.Stats();
      ASSERT_OK(s);
      stats = *s;
      if (stats["watch"]["overflows"] == 1) break;
    }
  }
  ASSERT_EQ(stats["watch"]["overflows"], 1) << "the stalled watcher never overflowed in " << writes
                                            << " writes: " << stats["watch"].dump();
  const int total = writes + 1;

  // Every reader: every change, each key once, in increasing versions.
  for (int r = 0; r < kReaders; ++r) {
    uint64_t last_version = 0;
    for (int n = 0; n < total; ++n) {
      auto e = readers[r]->Next();
      ASSERT_TRUE(e.has_value()) << "reader " << r << " got " << n << " of " << total;
      ASSERT_EQ((*e)["event"], "change") << e->dump();
      ASSERT_EQ((*e)["key"], "k" + std::to_string(n)) << "reader " << r;
      ASSERT_EQ((*e)["value"]["n"], n);
      ASSERT_GT((*e)["version"].get<uint64_t>(), last_version);
      last_version = (*e)["version"].get<uint64_t>();
    }
  }

  // The stalled watcher, reading at last: changes in increasing versions,
  // then the overflow that ended its watch.
  ASSERT_NO_FATAL_FAILURE(ExpectChangesThenOverflow(stalled, total + 1));

  auto after = writer.Stats();
  ASSERT_OK(after);
  const uint64_t sends = (*after)["network"]["batched_sends"].get<uint64_t>();
  const uint64_t calls = (*after)["network"]["batch_system_calls"].get<uint64_t>();
  if (!GetParam()) {
    EXPECT_EQ(sends, 0u);
    EXPECT_EQ(calls, 0u);
    return;
  }
  std::string why;
  if (server::internal::SendRing::Open(&why) == nullptr) {
    // The kernel refuses io_uring here: the server said so in its log and
    // sent with sendmsg, which the run above checked.
    EXPECT_EQ(sends, 0u);
    GTEST_SKIP() << "io_uring is refused on this machine (" << why << ")";
  }
  // Each change went to the seven watchers, three or four per loop, in one
  // submission per loop.
  EXPECT_GE(sends, uint64_t(total) * kReaders / 2) << (*after)["network"].dump();
  EXPECT_LT(calls, sends) << (*after)["network"].dump();
}

INSTANTIATE_TEST_SUITE_P(IoUringOnAndOff, BatchedSendTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "io_uring" : "sendmsg";
                         });

}  // namespace
}  // namespace skiff::testing
