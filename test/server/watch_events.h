// Checks on the events a watcher reads, shared by the watch tests.
#ifndef SKIFF_TEST_SERVER_WATCH_EVENTS_H_
#define SKIFF_TEST_SERVER_WATCH_EVENTS_H_

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "doc/document.h"

#include "test/server/ws_peer.h"
#include "test/status_matchers.h"

namespace skiff::testing {

// Reads a watcher whose watch overflowed while it did not read: changes in
// increasing versions, then the overflow event that ended the watch, within
// `most_frames`. Call through ASSERT_NO_FATAL_FAILURE.
inline void ExpectChangesThenOverflow(WsPeer& peer, int most_frames) {
  uint64_t last_version = 0;
  for (int i = 0; i < most_frames; ++i) {
    auto frame = peer.NextText();
    ASSERT_TRUE(frame.has_value()) << "no overflow event after " << i << " frames";
    if (frame->find("\"reason\":\"overflow\"") != std::string::npos) return;
    auto e = doc::Parse(*frame, doc::kNoLimits);
    ASSERT_OK(e);
    ASSERT_EQ((*e)["event"], "change") << *frame;
    ASSERT_GT((*e)["version"].get<uint64_t>(), last_version);
    last_version = (*e)["version"].get<uint64_t>();
  }
  FAIL() << "no overflow event in " << most_frames << " frames";
}

}  // namespace skiff::testing

#endif  // SKIFF_TEST_SERVER_WATCH_EVENTS_H_
