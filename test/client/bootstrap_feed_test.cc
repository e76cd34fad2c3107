#include "client/internal/bootstrap_feed.h"

#include <atomic>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "test/status_matchers.h"

namespace skiff::client::internal {
namespace {

BootstrapPage PageAfter(std::string key) {
  BootstrapPage page;
  page.next = RowName{"g", "t", std::move(key)};
  return page;
}

// The I/O thread asks ahead only while the device has taken every page read
// before, which bounds the pages read and not yet applied.
TEST(BootstrapFeedTest, AsksAheadOnlyWhileTheDeviceHasTakenEveryPage) {
  BootstrapFeed feed;
  ASSERT_TRUE(feed.BeginAskAhead());
  const uint64_t a = feed.Ask(), b = feed.Ask();
  feed.EndAskAhead();
  feed.Push(a, PageAfter("a"), /*next_asked=*/true);
  EXPECT_FALSE(feed.BeginAskAhead());  // one page waits for the device
  feed.Push(b, PageAfter("b"), false);
  EXPECT_FALSE(feed.BeginAskAhead());

  BootstrapFeed::Entry first = feed.Pop();
  ASSERT_OK(first.page);
  EXPECT_EQ(first.page->next->key, "a");
  EXPECT_TRUE(first.next_asked);
  EXPECT_FALSE(feed.BeginAskAhead());
  BootstrapFeed::Entry second = feed.Pop();
  EXPECT_EQ(second.page->next->key, "b");
  EXPECT_FALSE(second.next_asked);
  ASSERT_TRUE(feed.BeginAskAhead());
  feed.EndAskAhead();

  // The bootstrap ended: a late reply asks for nothing more, and the two
  // asks of the I/O thread are reported for the device's count.
  EXPECT_EQ(feed.Close(), 2u);
  EXPECT_FALSE(feed.BeginAskAhead());
}

// Close waits for an ask the I/O thread has begun, so the device does not
// drop the client that ask goes through while it is under way.
TEST(BootstrapFeedTest, CloseWaitsForAnAskUnderWay) {
  BootstrapFeed feed;
  ASSERT_TRUE(feed.BeginAskAhead());
  std::atomic<bool> closed{false};
  std::thread device([&] {
    EXPECT_EQ(feed.Close(), 1u);
    closed = true;
  });
  // However long this thread takes to get here, Close cannot have returned.
  EXPECT_FALSE(closed.load());
  feed.EndAskAhead();
  device.join();
  EXPECT_TRUE(closed.load());
}

// A request asked for while a page is read can fail at once, before that
// page is pushed; the device still meets the page first.
TEST(BootstrapFeedTest, PagesComeOutInTheOrderTheyWereAskedFor) {
  BootstrapFeed feed;
  const uint64_t page = feed.Ask();
  const uint64_t next = feed.Ask();
  feed.Push(next, Internal("the connection closed"), false);
  feed.Push(page, PageAfter("a"), true);
  BootstrapFeed::Entry first = feed.Pop();
  ASSERT_OK(first.page);
  EXPECT_EQ(first.page->next->key, "a");
  BootstrapFeed::Entry second = feed.Pop();
  EXPECT_FALSE(second.page.ok());
}

TEST(BootstrapFeedTest, PopWaitsForThePageAndCarriesAFailure) {
  BootstrapFeed feed;
  const uint64_t number = feed.Ask();
  std::thread io([&] { feed.Push(number, Internal("the connection closed"), false); });
  BootstrapFeed::Entry entry = feed.Pop();  // returns only once pushed
  io.join();
  EXPECT_FALSE(entry.page.ok());
  EXPECT_EQ(entry.page.status().message(), "the connection closed");
}

}  // namespace
}  // namespace skiff::client::internal
