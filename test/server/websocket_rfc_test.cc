// The server's WebSocket layer against RFC 6455, over a real socket to a real
// server: fragmented requests, control frames between fragments, the close
// handshake, the close code for each framing violation, the opening
// handshake's refusals, the plain HTTP health check, and a large frame after
// many small ones.
#include <string>

#include <gtest/gtest.h>

#include "doc/document.h"

#include "test/server/server_fixture.h"
#include "test/server/ws_peer.h"

namespace skiff::testing {
namespace {

using doc::Value;

class WebSocketRfcTest : public ServerFixture {
 protected:
  void TearDown() override {
    peers_.clear();  // before the server stops, so it need not wait for them
    ServerFixture::TearDown();
  }

  // A peer that completed the handshake (not logged in).
  WsPeer& Peer() {
    peers_.emplace_back(std::make_unique<WsPeer>());
    EXPECT_TRUE(peers_.back()->Open(server_->port()));
    return *peers_.back();
  }

  // A peer logged in as alice.
  WsPeer& AlicePeer() {
    WsPeer& p = Peer();
    Value login = {{"id", 1}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}};
    EXPECT_TRUE(p.SendText(login.dump()));
    std::optional<std::string> reply = p.NextText();
    EXPECT_TRUE(reply && Value::parse(*reply)["ok"] == true) << reply.value_or("no reply");
    return p;
  }

  // Sends raw frames; expects the server to close with `code` and then end
  // the TCP connection.
  void ExpectClosedWith(const std::string& frames, uint16_t code) {
    WsPeer& p = Peer();
    ASSERT_TRUE(p.SendRaw(frames));
    std::optional<Received> r = p.Next();
    ASSERT_TRUE(r.has_value()) << "no close frame";
    EXPECT_EQ(r->opcode, ws::Opcode::kClose);
    EXPECT_EQ(r->close_code, code) << r->payload;
    EXPECT_TRUE(p.WaitEnd());
    // The server carries on.
    WsPeer& other = Peer();
    ASSERT_TRUE(other.SendText(R"({"id":2,"op":"ping"})"));
    EXPECT_TRUE(other.NextText().has_value());
  }

  std::string HttpAnswer(const std::string& request) {
    WsPeer p;
    EXPECT_TRUE(p.Connect(server_->port()));
    EXPECT_TRUE(p.SendRaw(request));
    EXPECT_TRUE(p.WaitEnd());
    return p.raw();
  }

  std::vector<std::unique_ptr<WsPeer>> peers_;
};

TEST_F(WebSocketRfcTest, AnswersARequestSentInFragments) {
  WsPeer& p = Peer();
  ASSERT_TRUE(p.SendRaw(WsPeer::Frame(0x01, R"({"id":5,)") + WsPeer::Frame(0x00, R"("op":"ec)") +
                        WsPeer::Frame(0x80, R"(ho","data":"é"})")));
  std::optional<std::string> reply = p.NextText();
  ASSERT_TRUE(reply.has_value());
  Value v = Value::parse(*reply);
  EXPECT_EQ(v["id"], 5);
  EXPECT_EQ(v["data"], "é");
}

TEST_F(WebSocketRfcTest, AnswersAPingBetweenFragmentsAndTheRequestAfter) {
  WsPeer& p = Peer();
  ASSERT_TRUE(p.SendRaw(WsPeer::Frame(0x01, R"({"id":6,)") + WsPeer::Frame(0x89, "probe") +
                        WsPeer::Frame(0x80, R"("op":"ping"})")));
  std::optional<Received> pong = p.Next();
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->opcode, ws::Opcode::kPong);
  EXPECT_EQ(pong->payload, "probe");
  std::optional<std::string> reply = p.NextText();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(Value::parse(*reply)["id"], 6);
}

TEST_F(WebSocketRfcTest, EchoesTheClientsCloseAndEndsTheConnection) {
  WsPeer& p = Peer();
  ASSERT_TRUE(p.SendRaw(WsPeer::Frame(0x88, ws::ClosePayload(4001, "done"))));
  std::optional<Received> close = p.Next();
  ASSERT_TRUE(close.has_value());
  EXPECT_EQ(close->opcode, ws::Opcode::kClose);
  EXPECT_EQ(close->close_code, 4001);
  EXPECT_TRUE(p.WaitEnd());
}

TEST_F(WebSocketRfcTest, ClosesWithTheCodeEachViolationCalls) {
  const std::string unmasked = std::string("\x81\x02hi", 4);
  ExpectClosedWith(unmasked, ws::kCloseProtocolError);
  ExpectClosedWith(WsPeer::Frame(0xC1, "{}"), ws::kCloseProtocolError);  // reserved bit
  ExpectClosedWith(WsPeer::Frame(0x89, std::string(126, 'p')), ws::kCloseProtocolError);
  ExpectClosedWith(WsPeer::Frame(0x09, "ping"), ws::kCloseProtocolError);  // fragmented control
  ExpectClosedWith(WsPeer::Frame(0x80, "x"), ws::kCloseProtocolError);     // lone continuation
  // A length in 16 bits although it fits in 7: not the shortest form.
  ExpectClosedWith(std::string("\x81\xFE\x00\x02\0\0\0\0{}", 10), ws::kCloseProtocolError);
  // Invalid UTF-8 split across two fragments.
  ExpectClosedWith(WsPeer::Frame(0x01, "\"caf\xe2\x82") + WsPeer::Frame(0x80, "\x28\""),
                   ws::kCloseInvalidPayload);
  ExpectClosedWith(WsPeer::Frame(0x88, ws::ClosePayload(1005, "")), ws::kCloseProtocolError);
}

TEST_F(WebSocketRfcTest, ServesFramesSentTogetherWithTheHandshake) {
  WsPeer p;
  std::string why;
  ASSERT_TRUE(p.Open(server_->port(), &why,
                     WsPeer::Frame(0x81, R"({"id":1,"op":"ping"})") +
                         WsPeer::Frame(0x81, R"({"id":2,"op":"ping"})")))
      << why;
  EXPECT_EQ(p.NextText(), R"({"id":1,"ok":true})");
  EXPECT_EQ(p.NextText(), R"({"id":2,"ok":true})");
}

TEST_F(WebSocketRfcTest, TakesALargeFrameAfterManySmallOnes) {
  WsPeer& p = AlicePeer();
  std::string small;
  for (int i = 0; i < 2000; ++i) small += WsPeer::Frame(0x81, R"({"id":9,"op":"ping"})");
  const std::string big_value(2 << 20, 'v');
  Value set = {{"id", 10}, {"op", "set"}, {"table", "t"}, {"key", "big"}, {"value", big_value}};
  ASSERT_TRUE(p.SendRaw(small + WsPeer::Frame(0x81, set.dump())));
  int pings = 0;
  for (;;) {
    std::optional<std::string> reply = p.NextText();
    ASSERT_TRUE(reply.has_value()) << "after " << pings << " pings";
    Value v = Value::parse(*reply);
    if (v["id"] == 9) {
      ++pings;
      continue;
    }
    EXPECT_EQ(v["id"], 10);
    EXPECT_EQ(v["ok"], true) << *reply;
    break;
  }
  EXPECT_EQ(pings, 2000);
  ASSERT_TRUE(p.SendText(R"({"id":11,"op":"get","table":"t","key":"big"})"));
  std::optional<std::string> got = p.NextText();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(Value::parse(*got)["value"], big_value);
}

TEST_F(WebSocketRfcTest, AnswersHealthChecksInPlainHttp) {
  const std::string answer = HttpAnswer("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("\r\n\r\nok\n"), std::string::npos) << answer;
}

TEST_F(WebSocketRfcTest, RefusesHandshakesItCannotServeInWords) {
  const std::string plain = HttpAnswer("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(plain.rfind("HTTP/1.1 426 ", 0), 0u) << plain;
  const std::string old_version = HttpAnswer(
      "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n");
  EXPECT_EQ(old_version.rfind("HTTP/1.1 426 ", 0), 0u) << old_version;
  EXPECT_NE(old_version.find("Sec-WebSocket-Version: 13"), std::string::npos);
  const std::string garbage = HttpAnswer("\x16\x03\x01 not http\r\n\r\n");
  EXPECT_EQ(garbage.rfind("HTTP/1.1 400 ", 0), 0u) << garbage;
  const std::string huge =
      HttpAnswer("GET / HTTP/1.1\r\nX-Filler: " + std::string(9000, 'f') + "\r\n\r\n");
  EXPECT_EQ(huge.rfind("HTTP/1.1 431 ", 0), 0u) << huge;
}

TEST_F(WebSocketRfcTest, AnswersBinaryFramesWithAnErrorAndStaysOpen) {
  WsPeer& p = Peer();
  ASSERT_TRUE(p.SendRaw(WsPeer::Frame(0x82, "\x01\x02")));
  std::optional<std::string> reply = p.NextText();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(Value::parse(*reply)["error"]["code"], "bad_request");
  ASSERT_TRUE(p.SendText(R"({"id":3,"op":"ping"})"));
  EXPECT_TRUE(p.NextText().has_value());
}

}  // namespace
}  // namespace skiff::testing
