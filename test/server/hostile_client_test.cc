// Clients that do what no well-behaved one would, against a real server: one
// that never reads its replies, pipelines far past the in-flight limit,
// leaves frames or handshakes unfinished, or opens more connections than
// allowed. The server must keep its buffers within their bounds (read from
// its own `stats`), slow such clients down by not reading them instead of
// refusing well-formed requests, close the ones that stall past their
// deadlines, and keep serving everyone else.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "doc/document.h"

#include "test/server/server_fixture.h"
#include "test/server/ws_peer.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using doc::Value;
using std::chrono::milliseconds;

class HostileClientTest : public ServerFixture {
 protected:
  void SetUp() override {}  // each test sets its options, then calls Start()

  void Start() { ServerFixture::SetUp(); }

  std::unique_ptr<WsPeer> Peer(int receive_buffer = 0) {
    auto p = std::make_unique<WsPeer>();
    p->set_receive_buffer(receive_buffer);
    std::string why;
    EXPECT_TRUE(p->Open(server_->port(), &why)) << why;
    return p;
  }

  void Login(WsPeer& p) {
    Value login = {{"id", 1}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}};
    ASSERT_TRUE(p.SendText(login.dump()));
    std::optional<std::string> reply = p.NextText();
    ASSERT_TRUE(reply.has_value());
    ASSERT_EQ(Value::parse(*reply)["ok"], true) << *reply;
  }

  Value Network() {
    if (!observer_) observer_ = &Alice();
    auto stats = observer_->CallSync({{"op", "stats"}});
    EXPECT_OK(stats);
    return stats.ok() ? (*stats)["network"] : Value();
  }

  // Polls `stats` until `done(network)` holds (up to 60 s), checking
  // `invariant(network)` at every sample; false when it never held.
  template <typename Done, typename Invariant>
  bool PollNetwork(Done done, Invariant invariant) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      Value n = Network();
      invariant(n);
      if (done(n)) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  // Sends `frame` over and over without reading, until the socket takes
  // nothing for two seconds or `cap` bytes went out; returns the bytes sent.
  static size_t FloodWithoutReading(WsPeer& p, const std::string& frame, size_t cap) {
    size_t sent = 0, at = 0;
    while (sent < cap) {
      const ssize_t n = p.SendSome(std::string_view(frame).substr(at));
      if (n < 0) break;  // the server closed the connection
      if (n == 0) {
        pollfd w{p.fd(), POLLOUT, 0};
        // Nothing taken for two seconds: the server stopped reading us.
        if (::poll(&w, 1, 2000) <= 0 || !(w.revents & POLLOUT)) break;
        continue;
      }
      sent += static_cast<size_t>(n);
      at = (at + static_cast<size_t>(n)) % frame.size();
    }
    return sent;
  }

  // The ping of a well-behaved client still gets its answer.
  void OthersAreServed() {
    auto other = Peer();
    ASSERT_TRUE(other->SendText(R"({"id":77,"op":"ping"})"));
    EXPECT_EQ(other->NextText(), R"({"id":77,"ok":true})");
  }

  client::Client* observer_ = nullptr;  // reads stats
};

TEST_F(HostileClientTest, ClientThatNeverReadsIsNotReadEitherAndIsClosedInTheEnd) {
  options_.max_output_bytes = 256 * 1024;
  options_.send_timeout = milliseconds(1000);
  Start();
  // No login needed: echo is open to anyone.
  auto p = Peer(64 * 1024);
  const std::string echo = WsPeer::Frame(
      0x81, R"({"id":1,"op":"echo","data":")" + std::string(20 * 1024, 'e') + R"("})");
  const size_t cap = size_t{256} << 20;
  const size_t sent = FloodWithoutReading(*p, echo, cap);
  // Without back-pressure the server would read all 256 MiB and keep the
  // replies; with it, the flood stops once the socket buffers are full.
  EXPECT_LT(sent, size_t{64} << 20);
  const uint64_t bound = options_.max_output_bytes + 2 * echo.size();
  EXPECT_TRUE(PollNetwork(
      [](const Value& n) { return n["send_timeouts"] >= 1; },
      [&](const Value& n) { EXPECT_LE(n["buffered_output_bytes"].get<uint64_t>(), bound); }));
  OthersAreServed();
  EXPECT_TRUE(p->WaitEnd(milliseconds(30000)));
}

TEST_F(HostileClientTest, PipelinedGetsOfALargeDocumentStayWithinTheOutputBound) {
  options_.max_output_bytes = 512 * 1024;
  Start();
  ASSERT_OK(Alice().CallSync(
      {{"op", "set"}, {"table", "t"}, {"key", "big"}, {"value", std::string(10 * 1024, 'd')}}));
  auto p = Peer(64 * 1024);
  Login(*p);
  const std::string get = WsPeer::Frame(0x81, R"({"id":2,"op":"get","table":"t","key":"big"})");
  std::string many;
  for (int i = 0; i < 1000; ++i) many += get;
  const size_t sent = FloodWithoutReading(*p, many, size_t{64} << 20);
  EXPECT_LT(sent, size_t{32} << 20);
  const uint64_t bound = options_.max_output_bytes + 2 * 11 * 1024;
  EXPECT_TRUE(PollNetwork(
      [](const Value& n) { return n["paused"] >= 1; },
      [&](const Value& n) { EXPECT_LE(n["buffered_output_bytes"].get<uint64_t>(), bound); }));
  OthersAreServed();
  // Reading again drains it: every reply arrives, none refused.
  size_t replies = 0;
  while (replies < 1000) {
    std::optional<std::string> r = p->NextText();
    ASSERT_TRUE(r.has_value()) << "after " << replies << " replies";
    ASSERT_EQ(Value::parse(*r)["ok"], true) << *r;
    ++replies;
  }
}

// A client that pipelines its requests and then stops sending (FIN) still
// gets every reply the server makes before it closes. The requests are more
// than one read buffer, so the server may meet the end of the stream in the
// same turn of its loop as the last of them, before that turn's replies are
// written (how the bytes arrive decides); either way every reply comes.
TEST_F(HostileClientTest, RequestsSentBeforeAHalfCloseAreAllAnswered) {
  Start();
  auto p = Peer();
  Login(*p);
  constexpr int kPings = 3000;  // about 110 KB of frames
  std::string frames;
  for (int i = 0; i < kPings; ++i) {
    frames += WsPeer::Frame(0x81, R"({"id":)" + std::to_string(i) + R"(,"op":"ping"})");
  }
  ASSERT_TRUE(p->SendRaw(frames));
  p->EndSending();
  for (int i = 0; i < kPings; ++i) {
    std::optional<std::string> r = p->NextText();
    ASSERT_TRUE(r.has_value()) << "after " << i << " replies";
    ASSERT_EQ(Value::parse(*r)["id"], i) << *r;
  }
}

TEST_F(HostileClientTest, LongPipelinesAreSlowedNeverRefused) {
  options_.max_in_flight = 64;  // far below the pipelines below
  Start();
  constexpr int kConnections = 16;
  constexpr int kAdds = 2000;
  std::vector<std::unique_ptr<WsPeer>> peers;
  for (int c = 0; c < kConnections; ++c) {
    peers.push_back(Peer());
    Login(*peers.back());
  }
  auto set_peer = Peer();
  Login(*set_peer);
  // 2,000 sets on one connection and 16 x 2,000 adds on one key, all sent
  // at once, each from its own thread while the main thread reads.
  std::vector<std::thread> senders;
  senders.emplace_back([&] {
    std::string frames;
    for (int i = 0; i < kAdds; ++i) {
      frames += WsPeer::Frame(0x81, R"({"id":)" + std::to_string(i) +
                                        R"(,"op":"set","table":"t","key":"s)" + std::to_string(i) +
                                        R"(","value":{"n":1}})");
    }
    EXPECT_TRUE(set_peer->SendRaw(frames));
  });
  for (int c = 0; c < kConnections; ++c) {
    senders.emplace_back([&, c] {
      std::string frames;
      for (int i = 0; i < kAdds; ++i) {
        frames += WsPeer::Frame(
            0x81, R"({"id":)" + std::to_string(i) +
                      R"(,"op":"add","table":"t","key":"counter","path":["n"],"delta":1})");
      }
      EXPECT_TRUE(peers[c]->SendRaw(frames));
    });
  }
  auto read_all = [](WsPeer& p, int n) {
    int ok = 0;
    for (int i = 0; i < n; ++i) {
      std::optional<std::string> r = p.NextText(milliseconds(60000));
      if (!r) break;
      if (Value::parse(*r)["ok"] == true) {
        ++ok;
      } else {
        ADD_FAILURE() << *r;
      }
    }
    return ok;
  };
  EXPECT_EQ(read_all(*set_peer, kAdds), kAdds);
  for (auto& p : peers) EXPECT_EQ(read_all(*p, kAdds), kAdds);
  for (auto& t : senders) t.join();
  auto counter = Alice().CallSync({{"op", "get"}, {"table", "t"}, {"key", "counter"}});
  ASSERT_OK(counter);
  EXPECT_EQ((*counter)["value"]["n"], kConnections * kAdds);
}

TEST_F(HostileClientTest, UnfinishedFramesAreBoundedByTheBudgetAndTimedOut) {
  options_.max_buffered_bytes = 4u << 20;
  options_.frame_timeout = milliseconds(1000);
  Start();
  constexpr int kPeers = 8;
  std::vector<std::unique_ptr<WsPeer>> peers;
  for (int i = 0; i < kPeers; ++i) {
    peers.push_back(Peer());
    // The header of an 8 MiB frame and 3 MiB of it: 24 MiB offered in all.
    std::string partial;
    const uint8_t key[4] = {1, 2, 3, 4};
    ws::AppendHeader(partial, ws::Opcode::kText, 8u << 20, key);
    partial.append(3u << 20, 'x');
    peers.back()->SendSome(partial);  // what the kernel takes; the rest is not needed
  }
  // Capacity is counted, which may be twice the bytes held, and each peer
  // may have one read in hand past the budget.
  const uint64_t bound = 2 * options_.max_buffered_bytes + kPeers * 2 * 64 * 1024;
  EXPECT_TRUE(PollNetwork(
      [&](const Value& n) { return n["frame_timeouts"] >= kPeers; },
      [&](const Value& n) { EXPECT_LE(n["buffered_input_bytes"].get<uint64_t>(), bound); }));
  EXPECT_TRUE(PollNetwork([](const Value& n) { return n["buffered_input_bytes"] == 0; },
                          [](const Value&) {}));
  for (auto& p : peers) {
    std::optional<Received> close = p->Next();
    ASSERT_TRUE(close.has_value());
    EXPECT_EQ(close->close_code, ws::kClosePolicy);
  }
  OthersAreServed();
}

TEST_F(HostileClientTest, UnfinishedHandshakesAreClosedAtTheirDeadline) {
  options_.handshake_timeout = milliseconds(500);
  Start();
  constexpr int kPeers = 20;
  std::vector<std::unique_ptr<WsPeer>> peers;
  for (int i = 0; i < kPeers; ++i) {
    peers.push_back(std::make_unique<WsPeer>());
    ASSERT_TRUE(peers.back()->Connect(server_->port()));
    ASSERT_TRUE(peers.back()->SendRaw("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgr"));
  }
  for (auto& p : peers) EXPECT_TRUE(p->WaitEnd(milliseconds(30000)));
  EXPECT_GE(Network()["handshake_failures"], kPeers);
  OthersAreServed();
}

TEST_F(HostileClientTest, ConnectionsPastTheLimitAreRefusedInWords) {
  options_.max_connections = 4;
  Start();
  std::vector<std::unique_ptr<WsPeer>> peers;
  for (int i = 0; i < 4; ++i) peers.push_back(Peer());
  WsPeer fifth;
  std::string why;
  EXPECT_FALSE(fifth.Open(server_->port(), &why));
  EXPECT_NE(why.find("503"), std::string::npos) << why;
  EXPECT_NE(why.find("limit of 4 connections"), std::string::npos) << why;
  // A place frees once a connection goes.
  peers.pop_back();
  bool reopened = false;
  for (int attempt = 0; attempt < 500 && !reopened; ++attempt) {
    WsPeer again;
    reopened = again.Open(server_->port());
    if (!reopened) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(reopened);
}

TEST_F(HostileClientTest, PerAddressLimitRefusesTheSameAddressInWords) {
  options_.max_connections_per_address = 2;
  Start();
  auto a = Peer();
  auto b = Peer();
  WsPeer third;
  std::string why;
  EXPECT_FALSE(third.Open(server_->port(), &why));
  EXPECT_NE(why.find("per address"), std::string::npos) << why;
}

}  // namespace
}  // namespace skiff::testing
