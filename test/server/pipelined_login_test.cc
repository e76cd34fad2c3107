// Requests pipelined behind a login run after its session is set: the login
// is offloaded to a store worker and the connection is not read meanwhile,
// even when the login is the last frame of the bytes held back by an
// earlier pause and more bytes already wait in the socket (docs/protocol.md:
// requests already read run in order).
#include <string>

#include <gtest/gtest.h>

#include "doc/document.h"

#include "test/server/server_fixture.h"
#include "test/server/ws_peer.h"

namespace skiff::testing {
namespace {

using doc::Value;

class PipelinedLoginTest : public ServerFixture {};

TEST_F(PipelinedLoginTest, EveryGetAfterALoginSeesItsSession) {
  // Many rounds, each frame its own write, so that the server's reads end
  // at every place in the stream; batches keep both sides' buffers small.
  constexpr int kBatches = 80;
  constexpr int kRoundsPerBatch = 50;
  WsPeer peer;
  ASSERT_TRUE(peer.Open(server_->port()));
  int id = 0;
  int failures = 0;
  for (int batch = 0; batch < kBatches; ++batch) {
    const int first = id + 1;
    for (int round = 0; round < kRoundsPerBatch; ++round) {
      ASSERT_TRUE(peer.SendText(
          Value{{"id", ++id}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}}
              .dump()));
      ASSERT_TRUE(
          peer.SendText(Value{{"id", ++id}, {"op", "get"}, {"table", "t"}, {"key", "k"}}.dump()));
      ASSERT_TRUE(peer.SendText(Value{{"id", ++id}, {"op", "logout"}}.dump()));
    }
    for (int expected = first; expected <= id; ++expected) {
      std::optional<std::string> reply = peer.NextText();
      ASSERT_TRUE(reply.has_value()) << "no reply to request " << expected;
      const Value r = Value::parse(*reply);
      ASSERT_EQ(r["id"], expected) << *reply;  // in order
      if (r["ok"] != true) {
        ++failures;
        ADD_FAILURE() << *reply;
      }
      if (failures > 5) return;  // enough to tell what is wrong
    }
  }
}

}  // namespace
}  // namespace skiff::testing
