// The frame reader and writers against RFC 6455 section 5: what a receiver
// must accept, what it must refuse and with which close code, and that the
// answer never depends on how the bytes were cut into reads.
#include "ws/frame.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace skiff::ws {
namespace {

constexpr uint32_t kKey = 0x3d21fa37;  // the RFC's example key, 37 fa 21 3d on the wire

// A client frame: masked, with explicit FIN and opcode, so malformed ones
// can be built too.
std::string ClientFrame(uint8_t first_byte, const std::string& payload) {
  std::string out;
  AppendMaskedFrame(out, Opcode::kText, payload, kKey);
  out[0] = static_cast<char>(first_byte);
  return out;
}

std::string Text(const std::string& payload) { return ClientFrame(0x81, payload); }

struct Outcome {
  std::vector<Message> messages;
  std::vector<std::string> payloads;  // copies: the views die with the buffer
  uint16_t error = 0;
  size_t consumed = 0;
};

// Feeds `bytes` in pieces of `piece` bytes (0: all at once), keeping the
// unconsumed rest as a connection does.
Outcome Feed(const std::string& bytes, Role role = Role::kServer, size_t piece = 0,
             size_t max_message = 1 << 20) {
  FrameReader reader(role, max_message);
  Outcome out;
  std::string pending;
  size_t at = 0;
  while (at < bytes.size() && !reader.failed()) {
    const size_t n = piece == 0 ? bytes.size() : std::min(piece, bytes.size() - at);
    pending.append(bytes, at, n);
    at += n;
    FrameReader::Step step = reader.Read(pending.data(), pending.size(), [&](const Message& m) {
      out.messages.push_back(m);
      out.payloads.emplace_back(m.payload);
      return true;
    });
    out.consumed += step.consumed;
    pending.erase(0, step.consumed);
  }
  out.error = reader.error_code();
  return out;
}

TEST(FrameReaderTest, ReadsTheRfcExampleFrame) {
  // RFC 6455 5.7: a single-frame masked text message "Hello".
  const std::string frame = "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58";
  Outcome out = Feed(frame);
  ASSERT_EQ(out.error, 0);
  ASSERT_EQ(out.payloads.size(), 1u);
  EXPECT_EQ(out.messages[0].opcode, Opcode::kText);
  EXPECT_EQ(out.payloads[0], "Hello");
  EXPECT_EQ(out.consumed, frame.size());
  EXPECT_EQ(Text("Hello"), frame);  // the writer produces the same bytes
}

TEST(FrameReaderTest, GathersFragmentsAndPassesControlFramesBetweenThem) {
  const std::string bytes =
      ClientFrame(0x01, "Hel") + ClientFrame(0x89, "are you there") + ClientFrame(0x80, "lo");
  Outcome out = Feed(bytes);
  ASSERT_EQ(out.error, 0);
  ASSERT_EQ(out.payloads.size(), 2u);
  EXPECT_EQ(out.messages[0].opcode, Opcode::kPing);
  EXPECT_EQ(out.payloads[0], "are you there");
  EXPECT_EQ(out.messages[1].opcode, Opcode::kText);
  EXPECT_EQ(out.payloads[1], "Hello");
}

TEST(FrameReaderTest, EveryLengthEncodingAndEveryCutGivesTheSameMessages) {
  std::string bytes;
  const std::vector<size_t> sizes = {0, 1, 125, 126, 127, 65535, 65536, 70000};
  for (size_t n : sizes) bytes += Text(std::string(n, static_cast<char>('a' + n % 26)));
  bytes += ClientFrame(0x82, std::string(300, '\0'));  // binary, all zero bytes
  for (size_t piece : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}}) {
    Outcome out = Feed(bytes, Role::kServer, piece);
    ASSERT_EQ(out.error, 0) << "piece " << piece;
    ASSERT_EQ(out.payloads.size(), sizes.size() + 1) << "piece " << piece;
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_EQ(out.payloads[i], std::string(sizes[i], static_cast<char>('a' + sizes[i] % 26)));
    }
    EXPECT_EQ(out.messages.back().opcode, Opcode::kBinary);
    EXPECT_EQ(out.payloads.back(), std::string(300, '\0'));
  }
}

TEST(FrameReaderTest, TellsTheCallerHowLargeAnUnfinishedFrameIs) {
  const std::string frame = Text(std::string(1000, 'x'));
  FrameReader reader(Role::kServer, 1 << 20);
  std::string head = frame.substr(0, 20);
  FrameReader::Step step = reader.Read(head.data(), head.size(), [](const Message&) {
    ADD_FAILURE() << "no message is whole yet";
    return true;
  });
  EXPECT_EQ(step.consumed, 0u);
  EXPECT_EQ(step.frame_bytes, frame.size());
}

TEST(FrameReaderTest, StopsWhenTheCallbackSaysSo) {
  const std::string bytes = Text("one") + Text("two");
  FrameReader reader(Role::kServer, 1 << 20);
  std::string buffer = bytes;
  int seen = 0;
  FrameReader::Step step = reader.Read(buffer.data(), buffer.size(), [&](const Message&) {
    ++seen;
    return false;
  });
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.consumed, Text("one").size());
}

TEST(FrameReaderTest, ReadsCloseCodesAndReasons) {
  Outcome out = Feed(ClientFrame(0x88, ClosePayload(1000, "bye")) + ClientFrame(0x88, ""));
  ASSERT_EQ(out.error, 0);
  ASSERT_EQ(out.messages.size(), 2u);
  EXPECT_EQ(out.messages[0].close_code, 1000);
  EXPECT_EQ(std::string(out.payloads[0].substr(2)), "bye");
  EXPECT_EQ(out.messages[1].close_code, kCloseNoStatus);  // a close without a code
}

TEST(ClosePayloadTest, CutsALongReasonAtACodePoint) {
  std::string reason;
  for (int i = 0; i < 100; ++i) reason += "\xc3\xa9";  // 200 bytes of 'é'
  const std::string payload = ClosePayload(1001, reason);
  EXPECT_LE(payload.size(), kMaxControlPayload);
  Outcome out = Feed(ClientFrame(0x88, payload));
  EXPECT_EQ(out.error, 0);
}

struct Refusal {
  const char* name;
  std::string bytes;
  uint16_t code;
  Role role = Role::kServer;
};

class FrameRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(FrameRefusalTest, IsRefusedWithTheRfcCloseCode) {
  const Refusal& r = GetParam();
  for (size_t piece : {size_t{0}, size_t{1}}) {
    Outcome out = Feed(r.bytes, r.role, piece, 4096);
    EXPECT_EQ(out.error, r.code) << r.name << ", piece " << piece;
  }
}

std::string UnmaskedText(const std::string& payload) {
  std::string out;
  AppendFrame(out, Opcode::kText, payload);
  return out;
}

// A masked frame header with a hand-made length field.
std::string WithLength(const std::string& length_bytes, size_t payload) {
  return std::string("\x81") + length_bytes + std::string("\0\0\0\0", 4) +
         std::string(payload, 'a');
}

INSTANTIATE_TEST_SUITE_P(
    Rfc6455, FrameRefusalTest,
    ::testing::Values(
        Refusal{"unmasked client frame", UnmaskedText("hi"), kCloseProtocolError},
        Refusal{"masked server frame", Text("hi"), kCloseProtocolError, Role::kClient},
        Refusal{"reserved bit", ClientFrame(0xC1, "hi"), kCloseProtocolError},
        Refusal{"unknown opcode", ClientFrame(0x83, "hi"), kCloseProtocolError},
        Refusal{"fragmented ping", ClientFrame(0x09, "hi"), kCloseProtocolError},
        Refusal{"ping over 125 bytes", ClientFrame(0x89, std::string(126, 'p')),
                kCloseProtocolError},
        Refusal{"16-bit length under 126", WithLength(std::string("\xFE\x00\x05", 3), 5),
                kCloseProtocolError},
        Refusal{"64-bit length under 65536",
                WithLength(std::string("\xFF\0\0\0\0\0\0\x01\x00", 9), 256), kCloseProtocolError},
        Refusal{"64-bit length with its top bit",
                WithLength(std::string("\xFF\x80\0\0\0\0\0\0\0", 9), 0), kCloseProtocolError},
        Refusal{"continuation first", ClientFrame(0x80, "lo"), kCloseProtocolError},
        Refusal{"text inside a fragmented message",
                ClientFrame(0x01, "Hel") + ClientFrame(0x81, "lo"), kCloseProtocolError},
        Refusal{"invalid UTF-8", Text("\xc3\x28"), kCloseInvalidPayload},
        Refusal{"UTF-8 broken across fragments",
                ClientFrame(0x01, "ok \xe2\x82") + ClientFrame(0x80, "\x28"), kCloseInvalidPayload},
        Refusal{"text ending inside a code point", Text("\xe2\x82"), kCloseInvalidPayload},
        Refusal{"surrogate", Text("\xed\xa0\x80"), kCloseInvalidPayload},
        Refusal{"one-byte close", ClientFrame(0x88, "\x03"), kCloseProtocolError},
        Refusal{"close code 1005", ClientFrame(0x88, ClosePayload(1005, "")), kCloseProtocolError},
        Refusal{"close code 999", ClientFrame(0x88, ClosePayload(999, "")), kCloseProtocolError},
        Refusal{"close reason not UTF-8", ClientFrame(0x88, std::string("\x03\xe8\xff", 3)),
                kCloseInvalidPayload},
        Refusal{"message over the limit", Text(std::string(5000, 'x')), kCloseTooBig},
        Refusal{
            "fragments over the limit",
            ClientFrame(0x01, std::string(3000, 'x')) + ClientFrame(0x80, std::string(3000, 'x')),
            kCloseTooBig}),
    [](const ::testing::TestParamInfo<Refusal>& param) {
      std::string name;
      for (const char* c = param.param.name; *c; ++c) name += std::isalnum(*c) ? *c : '_';
      return name;
    });

TEST(FrameReaderTest, CodePointSplitAcrossFragmentsIsValid) {
  Outcome out = Feed(ClientFrame(0x01, "caf\xc3") + ClientFrame(0x80, "\xa9"));
  ASSERT_EQ(out.error, 0);
  ASSERT_EQ(out.payloads.size(), 1u);
  EXPECT_EQ(out.payloads[0], "caf\xc3\xa9");
}

TEST(FrameReaderTest, RefusesAnOversizedMessageFromItsHeaderAlone) {
  // Only the header of a 16 MiB frame arrives: refused before any payload.
  std::string frame;
  uint8_t key[4] = {1, 2, 3, 4};
  AppendHeader(frame, Opcode::kText, 16u << 20, key);
  Outcome out = Feed(frame, Role::kServer, 0, 1 << 20);
  EXPECT_EQ(out.error, kCloseTooBig);
}

TEST(MaskTest, MatchesTheBytewiseDefinitionAtEveryLength) {
  const uint8_t key[4] = {0x12, 0x34, 0x56, 0x78};
  for (size_t n = 0; n < 40; ++n) {
    std::string data(n, '\0');
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<char>(i * 7);
    std::string expected = data;
    for (size_t i = 0; i < n; ++i) expected[i] = static_cast<char>(expected[i] ^ key[i % 4]);
    Mask(data.data(), n, key);
    EXPECT_EQ(data, expected) << n;
  }
}

}  // namespace
}  // namespace skiff::ws
