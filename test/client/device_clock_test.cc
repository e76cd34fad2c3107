// The device's sync loop keeps its time on the clock its options name: a
// test moves a ManualClock instead of waiting for real time to pass.
#include <chrono>
#include <future>
#include <memory>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "client/device.h"
#include "client/memory_storage.h"

#include "test/status_matchers.h"

namespace skiff::client {
namespace {

using std::chrono::seconds;

TEST(DeviceClockTest, WaitingForSyncEndsWhenTheDevicesClockPassesTheTimeout) {
  ManualClock clock;
  MemoryStorage storage;
  DeviceOptions o;
  o.port = 1;  // nothing listens there: the device stays offline
  o.device_id = "clock-test";
  o.user = "nobody";
  o.secret = "none";
  o.clock = &clock;
  auto device = Device::Open(o, storage);
  ASSERT_OK(device);
  // An hour of the device's time; on the real clock this would hang the
  // test, on the manual one it ends when the test moves it.
  auto waited = std::async(std::launch::async,
                           [&] { return (*device)->WaitUntilSynced(std::chrono::hours(1)); });
  // Moved until the wait ends, since it may start after any one move
  // (bounded: a minute of real time).
  for (int i = 0;
       i < 6000 && waited.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready;
       ++i) {
    clock.Advance(std::chrono::hours(2));
  }
  ASSERT_EQ(waited.wait_for(seconds(0)), std::future_status::ready);
  const Status s = waited.get();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ((*device)->state(), SyncState::kOffline);
}

}  // namespace
}  // namespace skiff::client
