// The geo index's lock (geo/internal/writer_first_mutex.h): readers share
// it, a writer has it alone.
#include "geo/internal/writer_first_mutex.h"

#include <thread>

#include <gtest/gtest.h>

namespace skiff::geo::internal {
namespace {

TEST(WriterFirstMutexTest, ReadersShareItAndAWriterWaitsForThem) {
  WriterFirstMutex mu;
  {
    ReaderLock reader(&mu);
    bool second_reader_got_in = false;
    std::thread other([&] {
      ReaderLock also(&mu);  // would never return if readers excluded each other
      second_reader_got_in = true;
    });
    other.join();
    EXPECT_TRUE(second_reader_got_in);
    bool writer_got_in = true;
    std::thread writer([&] {
      writer_got_in = mu.TryLock();
      if (writer_got_in) mu.Unlock();
    });
    writer.join();
    EXPECT_FALSE(writer_got_in);
  }
  ASSERT_TRUE(mu.TryLock());
  mu.Unlock();
}

TEST(WriterFirstMutexTest, AWriterHasItAlone) {
  WriterFirstMutex mu;
  WriterLock writer(&mu);
  bool other_got_in = true;
  std::thread other([&] {
    other_got_in = mu.TryLock();
    if (other_got_in) mu.Unlock();
  });
  other.join();
  EXPECT_FALSE(other_got_in);
}

}  // namespace
}  // namespace skiff::geo::internal
