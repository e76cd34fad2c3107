// How connections end: the idle timeout closes a silent connection but not
// one whose only activity is a held sync wait, and a graceful stop answers
// held waits (changed: false) before it closes their connections.
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "doc/document.h"

#include "test/server/server_fixture.h"
#include "test/server/ws_peer.h"

namespace skiff::testing {
namespace {

using doc::Value;
using std::chrono::milliseconds;

class ConnectionLifecycleTest : public ServerFixture {
 protected:
  void SetUp() override {}
  void Start() { ServerFixture::SetUp(); }

  std::unique_ptr<WsPeer> LoggedIn() {
    auto p = std::make_unique<WsPeer>();
    EXPECT_TRUE(p->Open(server_->port()));
    Value login = {{"id", 1}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}};
    EXPECT_TRUE(p->SendText(login.dump()));
    EXPECT_EQ(p->NextText(), R"({"id":1,"ok":true})");
    return p;
  }
};

TEST_F(ConnectionLifecycleTest, IdleTimeoutSparesAConnectionHoldingAWait) {
  options_.idle_timeout = milliseconds(300);
  Start();
  auto waiting = LoggedIn();
  ASSERT_TRUE(waiting->SendText(R"({"id":2,"op":"wait","since":0,"timeout_ms":60000})"));
  auto silent = LoggedIn();
  // The silent one is closed by the idle timeout ...
  std::optional<Received> closed = silent->Next(milliseconds(30000));
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->opcode, ws::Opcode::kClose);
  EXPECT_EQ(closed->close_code, ws::kCloseNormal);
  EXPECT_EQ(closed->payload.substr(2), "idle timeout");
  // ... long after the waiting one went silent too: it is still open.
  ASSERT_TRUE(waiting->SendText(R"({"id":3,"op":"ping"})"));
  EXPECT_EQ(waiting->NextText(), R"({"id":3,"ok":true})");
}

TEST_F(ConnectionLifecycleTest, AStopAnswersHeldWaitsBeforeClosing) {
  Start();
  auto waiting = LoggedIn();
  ASSERT_TRUE(waiting->SendText(R"({"id":2,"op":"wait","since":0,"timeout_ms":60000})"));
  // Held once the server counts it.
  bool held = false;
  for (int i = 0; i < 2000 && !held; ++i) {
    auto stats = Alice().CallSync({{"op", "stats"}});
    held = stats.ok() && (*stats)["sync"]["waits_held"] == 1;
    if (!held) std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(held);
  clients_.clear();
  std::thread stopper([&] { StopServer(); });
  std::optional<std::string> answer = waiting->NextText(milliseconds(30000));
  ASSERT_TRUE(answer.has_value());
  Value a = Value::parse(*answer);
  EXPECT_EQ(a["id"], 2);
  EXPECT_EQ(a["ok"], true);
  EXPECT_EQ(a["changed"], false);
  std::optional<Received> close = waiting->Next(milliseconds(30000));
  ASSERT_TRUE(close.has_value());
  EXPECT_EQ(close->close_code, ws::kCloseGoingAway);
  waiting.reset();
  stopper.join();
}

}  // namespace
}  // namespace skiff::testing
