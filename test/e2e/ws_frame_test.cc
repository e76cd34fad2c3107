// The load driver's wire pieces: client frames are masked and decode back
// to their payload, server frames of every length form are cut correctly
// (also when they arrive a byte at a time or fragmented), and reply members
// are found without a parser.
#include "support/ws_frame.h"

#include <string>

#include <gtest/gtest.h>

#include "support/load_driver.h"

namespace skiff::bench {
namespace {

// A server frame (unmasked) carrying `payload`.
std::string ServerFrame(uint8_t opcode, const std::string& payload, bool fin = true) {
  std::string out;
  out += static_cast<char>((fin ? 0x80 : 0) | opcode);
  const size_t n = payload.size();
  if (n < 126) {
    out += static_cast<char>(n);
  } else if (n <= 0xFFFF) {
    out += static_cast<char>(126);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n & 0xFF);
  } else {
    out += static_cast<char>(127);
    for (int shift = 56; shift >= 0; shift -= 8)
      out += static_cast<char>((uint64_t{n} >> shift) & 0xFF);
  }
  return out + payload;
}

// Undoes AppendMaskedFrame: checks the mask bit and unmasks.
std::string Unmask(const std::string& frame) {
  const auto* p = reinterpret_cast<const unsigned char*>(frame.data());
  EXPECT_EQ(p[1] & 0x80, 0x80);
  uint64_t len = p[1] & 0x7F;
  size_t at = 2;
  if (len == 126) {
    len = (uint64_t{p[2]} << 8) | p[3];
    at = 4;
  } else if (len == 127) {
    len = 0;
    for (int i = 0; i < 8; ++i) len = (len << 8) | p[2 + i];
    at = 10;
  }
  const unsigned char* key = p + at;
  at += 4;
  EXPECT_EQ(frame.size(), at + len);
  std::string out(len, '\0');
  for (size_t i = 0; i < len; ++i) out[i] = static_cast<char>(p[at + i] ^ key[i & 3]);
  return out;
}

TEST(WsFrameTest, MaskedFramesOfEveryLengthFormDecode) {
  MaskState mask;
  for (size_t n : {0, 1, 7, 8, 125, 126, 1000, 65535, 65536, 300000}) {
    std::string payload(n, 'x');
    for (size_t i = 0; i < n; ++i) payload[i] = static_cast<char>('a' + i % 26);
    std::string frame;
    AppendMaskedTextFrame(frame, payload, mask);
    EXPECT_EQ(frame[0] & 0x0F, kOpText);
    EXPECT_EQ(Unmask(frame), payload) << n;
  }
}

TEST(WsFrameTest, ReaderCutsFramesArrivingByteByByte) {
  const std::string big(70000, 'b');
  const std::string stream =
      ServerFrame(kOpText, "{\"id\":1}") + ServerFrame(kOpText, big) + ServerFrame(kOpPing, "p");
  FrameReader reader;
  std::vector<std::pair<uint8_t, std::string>> got;
  for (char c : stream) {
    reader.Append(std::string_view(&c, 1));
    Frame f;
    while (reader.Next(&f) == FrameReader::kFrame)
      got.emplace_back(f.opcode, std::string(f.payload));
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].second, "{\"id\":1}");
  EXPECT_EQ(got[1].second, big);
  EXPECT_EQ(got[2].first, kOpPing);
}

TEST(WsFrameTest, FragmentsAreReassembledAndMaskedServerFramesRefused) {
  FrameReader reader;
  reader.Append(ServerFrame(kOpText, "ab", false) + ServerFrame(kOpContinuation, "cd"));
  Frame f;
  ASSERT_EQ(reader.Next(&f), FrameReader::kFrame);
  EXPECT_EQ(f.opcode, kOpText);
  EXPECT_EQ(f.payload, "abcd");
  EXPECT_EQ(reader.Next(&f), FrameReader::kNeedMore);

  FrameReader bad;
  std::string masked = ServerFrame(kOpText, "x");
  masked[1] = static_cast<char>(masked[1] | 0x80);
  bad.Append(masked + "kkkk");
  EXPECT_EQ(bad.Next(&f), FrameReader::kBad);
}

TEST(WsFrameTest, ReplyMembersAreFoundInServerReplies) {
  const std::string get = R"({"id":7,"ok":true,"found":true,"value":{"n":1,"s":"a,b}"}})";
  EXPECT_EQ(ReplyMember(get, "ok"), "true");
  EXPECT_EQ(ReplyMember(get, "found"), "true");
  EXPECT_EQ(LastReplyMember(get, "value"), R"({"n":1,"s":"a,b}"})");
  EXPECT_EQ(ReplyMember(get, "missing"), "");
  std::string quoted;
  AppendJsonString(quoted, "a\"b\\c\n");
  EXPECT_EQ(quoted, R"("a\"b\\c\u000a")");
}

}  // namespace
}  // namespace skiff::bench
