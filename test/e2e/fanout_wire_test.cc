// The fan-out family's wire parsers (support/fanout_wire.h): RESP replies
// and pushes, NATS operations and skiffd's change events. Each parser must
// take a message that arrives in any pieces (0 until it is whole, then its
// exact size), leave the bytes after it alone, and refuse malformed input
// rather than read past it.
#include "support/fanout_wire.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace skiff::bench {
namespace {

// Every proper prefix of `whole` is incomplete (0), and `whole` followed by
// more bytes takes exactly whole.size().
template <typename Message, typename Parse>
void ExpectWholeOnlyWhenComplete(const std::string& whole, Parse parse) {
  for (size_t n = 0; n < whole.size(); ++n) {
    Message m;
    EXPECT_EQ(parse(std::string_view(whole).substr(0, n), &m), 0u) << "prefix of " << n;
  }
  Message m;
  EXPECT_EQ(parse(std::string_view(whole + "*1\r\nPING\r\n"), &m), whole.size());
}

size_t Resp(std::string_view in, RespMessage* out) { return ParseResp(in, out); }
size_t Nats(std::string_view in, NatsMessage* out) { return ParseNats(in, out); }

TEST(RespTest, ReadsSimpleStringsErrorsAndIntegers) {
  RespMessage m;
  EXPECT_EQ(ParseResp("+OK\r\n", &m), 5u);
  EXPECT_EQ(m.type, '+');
  EXPECT_EQ(m.text, "OK");
  EXPECT_EQ(ParseResp("-ERR unknown command\r\n", &m), 22u);
  EXPECT_EQ(m.type, '-');
  EXPECT_EQ(m.text, "ERR unknown command");
  EXPECT_EQ(ParseResp(":1000\r\n", &m), 7u);
  EXPECT_EQ(m.type, ':');
  EXPECT_EQ(m.text, "1000");
}

TEST(RespTest, ReadsAPushAndASubscriptionConfirmation) {
  const std::string push = "*3\r\n$7\r\nmessage\r\n$2\r\nk0\r\n$11\r\n{\"n\":1}\r\nab\r\n";
  RespMessage m;
  ASSERT_EQ(ParseResp(push, &m), push.size());
  EXPECT_EQ(m.type, '*');
  ASSERT_EQ(m.count, 3u);
  EXPECT_EQ(m.items[0], "message");
  EXPECT_EQ(m.items[1], "k0");
  // A bulk string is taken by its length, CRLF inside it included.
  EXPECT_EQ(m.items[2], "{\"n\":1}\r\nab");

  const std::string confirmed = "*3\r\n$9\r\nsubscribe\r\n$2\r\nk0\r\n:1\r\n";
  ASSERT_EQ(ParseResp(confirmed, &m), confirmed.size());
  ASSERT_EQ(m.count, 3u);
  EXPECT_EQ(m.items[0], "subscribe");
  EXPECT_EQ(m.items[2], "1");

  const std::string pattern = "*4\r\n$8\r\npmessage\r\n$3\r\ng1*\r\n$4\r\ng1/a\r\n$0\r\n\r\n";
  ASSERT_EQ(ParseResp(pattern, &m), pattern.size());
  ASSERT_EQ(m.count, 4u);
  EXPECT_EQ(m.items[2], "g1/a");
  EXPECT_EQ(m.items[3], "");
}

TEST(RespTest, WaitsForTheWholeMessageInAnySplit) {
  ExpectWholeOnlyWhenComplete<RespMessage>("+OK\r\n", Resp);
  ExpectWholeOnlyWhenComplete<RespMessage>(":42\r\n", Resp);
  ExpectWholeOnlyWhenComplete<RespMessage>(
      "*3\r\n$7\r\nmessage\r\n$2\r\nk0\r\n$10\r\n0123456789\r\n", Resp);
  ExpectWholeOnlyWhenComplete<RespMessage>("*3\r\n$9\r\nsubscribe\r\n$2\r\nk0\r\n:1\r\n", Resp);
}

TEST(RespTest, ReadsMessagesOneAfterAnother) {
  const std::string in = ":1\r\n*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nb\r\n+OK\r\n";
  std::string_view rest = in;
  std::vector<char> types;
  while (!rest.empty()) {
    RespMessage m;
    const size_t n = ParseResp(rest, &m);
    ASSERT_NE(n, 0u);
    ASSERT_NE(n, kMalformed);
    types.push_back(m.type);
    rest.remove_prefix(n);
  }
  EXPECT_EQ(types, (std::vector<char>{':', '*', '+'}));
}

TEST(RespTest, RefusesMalformedInput) {
  RespMessage m;
  EXPECT_EQ(ParseResp("?what\r\n", &m), kMalformed);
  EXPECT_EQ(ParseResp("*x\r\n", &m), kMalformed);
  EXPECT_EQ(ParseResp("*-1\r\n", &m), kMalformed);
  // More elements than a push or a confirmation has.
  EXPECT_EQ(ParseResp("*5\r\n", &m), kMalformed);
  // An element that is neither a bulk string nor an integer.
  EXPECT_EQ(ParseResp("*1\r\n+OK\r\n", &m), kMalformed);
  EXPECT_EQ(ParseResp("*1\r\n$-1\r\n", &m), kMalformed);
  EXPECT_EQ(ParseResp("*1\r\n$x\r\nab\r\n", &m), kMalformed);
  // A bulk string longer than its length says.
  EXPECT_EQ(ParseResp("*1\r\n$2\r\nabc\r\n", &m), kMalformed);
}

TEST(RespTest, WritesCommandsOfBulkStrings) {
  EXPECT_EQ(RespCommand({"PUBLISH", "k0", "{}"}),
            "*3\r\n$7\r\nPUBLISH\r\n$2\r\nk0\r\n$2\r\n{}\r\n");
  EXPECT_EQ(RespCommand({"PING"}), "*1\r\n$4\r\nPING\r\n");
  // What it writes reads back as the same strings.
  const std::string cmd = RespCommand({"SUBSCRIBE", "a\r\nb", ""});
  RespMessage m;
  ASSERT_EQ(ParseResp(cmd, &m), cmd.size());
  ASSERT_EQ(m.count, 3u);
  EXPECT_EQ(m.items[1], "a\r\nb");
  EXPECT_EQ(m.items[2], "");
}

TEST(NatsTest, ReadsControlLines) {
  NatsMessage m;
  EXPECT_EQ(ParseNats("PING\r\n", &m), 6u);
  EXPECT_EQ(m.kind, NatsMessage::Kind::kPing);
  EXPECT_EQ(ParseNats("PONG\r\n", &m), 6u);
  EXPECT_EQ(m.kind, NatsMessage::Kind::kPong);
  EXPECT_EQ(ParseNats("+OK\r\n", &m), 5u);
  EXPECT_EQ(m.kind, NatsMessage::Kind::kOk);
  EXPECT_EQ(ParseNats("INFO {\"server_id\":\"x\"}\r\n", &m), 24u);
  EXPECT_EQ(m.kind, NatsMessage::Kind::kInfo);
  EXPECT_EQ(ParseNats("-ERR 'Slow Consumer Detected'\r\n", &m), 31u);
  EXPECT_EQ(m.kind, NatsMessage::Kind::kErr);
  EXPECT_EQ(m.payload, "-ERR 'Slow Consumer Detected'");
}

TEST(NatsTest, ReadsMsgWithAndWithoutAReplySubject) {
  const std::string msg = "MSG g1.k2 7 11\r\n{\"n\":1}\r\nab\r\n";
  NatsMessage m;
  ASSERT_EQ(ParseNats(msg, &m), msg.size());
  EXPECT_EQ(m.kind, NatsMessage::Kind::kMsg);
  EXPECT_EQ(m.subject, "g1.k2");
  // The payload is taken by its size, CRLF inside it included.
  EXPECT_EQ(m.payload, "{\"n\":1}\r\nab");

  const std::string reply = "MSG k0 1 _INBOX.a 2\r\nhi\r\n";
  ASSERT_EQ(ParseNats(reply, &m), reply.size());
  EXPECT_EQ(m.subject, "k0");
  EXPECT_EQ(m.payload, "hi");

  const std::string empty = "MSG k0 1 0\r\n\r\n";
  ASSERT_EQ(ParseNats(empty, &m), empty.size());
  EXPECT_EQ(m.payload, "");
}

TEST(NatsTest, WaitsForTheWholeMessageInAnySplit) {
  ExpectWholeOnlyWhenComplete<NatsMessage>("PONG\r\n", Nats);
  ExpectWholeOnlyWhenComplete<NatsMessage>("MSG g1.k2 7 10\r\n0123456789\r\n", Nats);
  ExpectWholeOnlyWhenComplete<NatsMessage>("MSG k0 1 _INBOX.a 2\r\nhi\r\n", Nats);
}

TEST(NatsTest, RefusesMalformedInput) {
  NatsMessage m;
  EXPECT_EQ(ParseNats("HELLO\r\n", &m), kMalformed);
  EXPECT_EQ(ParseNats("MSG k0\r\n", &m), kMalformed);                // no sid, no size
  EXPECT_EQ(ParseNats("MSG k0 1 x\r\nab\r\n", &m), kMalformed);      // size not a number
  EXPECT_EQ(ParseNats("MSG k0 1 r s 2\r\nab\r\n", &m), kMalformed);  // too many words
  // A payload longer than its size says.
  EXPECT_EQ(ParseNats("MSG k0 1 2\r\nabc\r\n", &m), kMalformed);
}

TEST(NatsTest, MapsKeysToSubjectsAndBack) {
  EXPECT_EQ(NatsSubject("g1/k2"), "g1.k2");
  EXPECT_EQ(KeyOfNatsSubject("g1.k2"), "g1/k2");
  EXPECT_EQ(KeyOfNatsSubject(NatsSubject("k0")), "k0");
}

TEST(ChangeTest, ReadsSkiffdEvents) {
  FanoutDelivery d;
  ASSERT_TRUE(ParseChange(
      R"({"event":"change","watch":3,"table":"fanout","key":"k0","value":{"k":"k0","n":7},"version":42})",
      &d));
  EXPECT_EQ(d.key, "k0");
  EXPECT_EQ(d.value, R"({"k":"k0","n":7})");
  EXPECT_EQ(d.version, 42u);
  EXPECT_FALSE(d.coalesced);

  ASSERT_TRUE(ParseChange(
      R"({"event":"change","watch":3,"coalesced":true,"table":"fanout","key":"g1/a","value":[1,{"version":2}],"version":9})",
      &d));
  EXPECT_EQ(d.key, "g1/a");
  // A "version" inside the value is the value's: the event's is the last.
  EXPECT_EQ(d.value, R"([1,{"version":2}])");
  EXPECT_EQ(d.version, 9u);
  EXPECT_TRUE(d.coalesced);
}

TEST(ChangeTest, ReadsPeerEventsWithoutAVersion) {
  FanoutDelivery d;
  d.version = 5;
  ASSERT_TRUE(ParseChange(R"({"event":"change","key":"k1","value":"text"})", &d));
  EXPECT_EQ(d.key, "k1");
  EXPECT_EQ(d.value, R"("text")");
  EXPECT_EQ(d.version, 0u);
  EXPECT_FALSE(d.coalesced);
}

TEST(ChangeTest, RefusesWhatIsNotAWholeEvent) {
  FanoutDelivery d;
  const std::string whole =
      R"({"event":"change","watch":1,"table":"t","key":"k0","value":{"n":1},"version":3})";
  // A payload cut anywhere but after a brace is not an event. The value is
  // not parsed as JSON: cut after its own closing brace, what is left reads
  // as a peer's event with a shorter value, which the family's check of
  // every value against the one written catches (bench/fanout_bench.cc).
  for (size_t n = 0; n < whole.size(); ++n) {
    const std::string_view cut = std::string_view(whole).substr(0, n);
    if (cut.ends_with('}')) {
      if (ParseChange(cut, &d)) {
        EXPECT_NE(d.value, R"({"n":1})") << "cut at " << n;
      }
      continue;
    }
    EXPECT_FALSE(ParseChange(cut, &d)) << "cut at " << n;
  }
  EXPECT_FALSE(ParseChange(R"({"event":"change","value":1})", &d));            // no key
  EXPECT_FALSE(ParseChange(R"({"event":"change","key":"k0"})", &d));           // no value
  EXPECT_FALSE(ParseChange(R"({"event":"change","key":"k0","value":})", &d));  // empty value
  EXPECT_FALSE(ParseChange(R"({"event":"change","key":"k0","value":1,"version":x})", &d));
  EXPECT_FALSE(ParseChange(R"({"event":"change","key":"k0","value":1,"version":})", &d));
}

TEST(ChangeTest, FindsNumbersAndQuotesStrings) {
  uint64_t n = 0;
  EXPECT_TRUE(ParseNumber(R"({"id":12,"ok":true})", R"("id":)", &n));
  EXPECT_EQ(n, 12u);
  EXPECT_FALSE(ParseNumber(R"({"ok":true})", R"("id":)", &n));
  EXPECT_FALSE(ParseNumber(R"({"id":"x"})", R"("id":)", &n));
  EXPECT_EQ(JsonString("a\"b\\c\n"), R"("a\"b\\c\u000a")");
}

}  // namespace
}  // namespace skiff::bench
