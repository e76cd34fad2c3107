// The opening handshake of RFC 6455 section 4: the accept value of the RFC's
// example, what a request must carry, and the client's check of the answer.
#include "ws/handshake.h"

#include <string>

#include <gtest/gtest.h>

namespace skiff::ws {
namespace {

TEST(HandshakeTest, AcceptKeyMatchesTheRfcExample) {
  EXPECT_EQ(AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

const char* const kRequest =
    "GET /chat HTTP/1.1\r\nHost: server.example.com\r\nupgrade: WebSocket\r\n"
    "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\n\r\nframes follow";

TEST(HandshakeTest, ParsesAnUpgradeRequestWithHeadersInAnyCase) {
  HttpRequest r;
  std::string why;
  ASSERT_EQ(ParseRequestHead(kRequest, 8192, &r, &why), HeadResult::kComplete) << why;
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/chat");
  EXPECT_EQ(r.key, "dGhlIHNhbXBsZSBub25jZQ==");
  EXPECT_EQ(std::string(kRequest).substr(r.head_bytes), "frames follow");
  EXPECT_EQ(UpgradeProblem(r), "");
}

TEST(HandshakeTest, WaitsForTheBlankLineAndBoundsTheHead) {
  HttpRequest r;
  std::string why;
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHost: x\r\n", 8192, &r, &why),
            HeadResult::kNeedMore);
  EXPECT_EQ(ParseRequestHead(std::string(9000, 'a'), 8192, &r, &why), HeadResult::kTooLarge);
  EXPECT_EQ(ParseRequestHead("garbage\r\n\r\n", 8192, &r, &why), HeadResult::kBad);
}

TEST(HandshakeTest, NamesWhatAnUpgradeLacks) {
  auto problem = [](std::string head) {
    HttpRequest r;
    std::string why;
    EXPECT_EQ(ParseRequestHead(head, 8192, &r, &why), HeadResult::kComplete) << head;
    return UpgradeProblem(r);
  };
  const std::string ok_headers =
      "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
      "dGhlIHNhbXBsZSBub25jZQ==\r\n";
  EXPECT_NE(problem("POST / HTTP/1.1\r\n" + ok_headers + "Sec-WebSocket-Version: 13\r\n\r\n"), "");
  EXPECT_NE(problem("GET / HTTP/1.0\r\n" + ok_headers + "Sec-WebSocket-Version: 13\r\n\r\n"), "");
  EXPECT_NE(problem("GET / HTTP/1.1\r\n" + ok_headers + "Sec-WebSocket-Version: 8\r\n\r\n"), "");
  EXPECT_NE(problem("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "");
  EXPECT_NE(problem("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n"),
            "");
}

TEST(HandshakeTest, ClientChecksTheServersAnswer) {
  const std::string key = NewClientKey();
  EXPECT_EQ(key.size(), 24u);
  HttpRequest r;
  std::string why;
  const std::string request = ClientRequest("127.0.0.1:7420", key);
  ASSERT_EQ(ParseRequestHead(request, 8192, &r, &why), HeadResult::kComplete);
  EXPECT_EQ(UpgradeProblem(r), "");
  size_t head = 0;
  const std::string answer = UpgradeResponse(key) + "\x81\x02hi";
  ASSERT_EQ(ParseUpgradeResponse(answer, key, &head, &why), ResponseResult::kAccepted) << why;
  EXPECT_EQ(answer.substr(head), "\x81\x02hi");
  EXPECT_EQ(ParseUpgradeResponse(UpgradeResponse("another key, another accept"), key, &head, &why),
            ResponseResult::kRefused);
  EXPECT_EQ(
      ParseUpgradeResponse(PlainResponse(503, "Service Unavailable", "full\n"), key, &head, &why),
      ResponseResult::kRefused);
  EXPECT_NE(why.find("503"), std::string::npos);
  EXPECT_NE(why.find("full"), std::string::npos);
}

}  // namespace
}  // namespace skiff::ws
