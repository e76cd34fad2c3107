// The suite's client side of the wire: FrameInput takes server frames read
// into it in any pieces (a large frame grows the buffer to fit it, a ping
// between replies is handed out too), refuses a masked server frame, and the
// load driver finds reply members without a parser.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/frame_input.h"
#include "support/load_driver.h"

#include "ws/frame.h"

namespace skiff::bench {
namespace {

// Reads `bytes` into `input` `piece` bytes at a time, collecting messages.
std::vector<std::string> ReadInPieces(FrameInput& input, const std::string& bytes, size_t piece,
                                      bool* valid) {
  std::vector<std::string> got;
  *valid = true;
  for (size_t at = 0; at < bytes.size() && *valid;) {
    FrameInput::Span space = input.Space();
    const size_t n = std::min({piece, space.size, bytes.size() - at});
    std::copy(bytes.data() + at, bytes.data() + at + n, space.data);
    input.Commit(n);
    at += n;
    *valid = input.Drain([&](const ws::Message& m) {
      got.emplace_back(m.payload);
      return true;
    });
  }
  return got;
}

TEST(FrameInputTest, TakesServerFramesInAnyPieces) {
  std::string bytes;
  const std::vector<std::string> payloads = {"{}", std::string(300, 'a'), "",
                                             std::string(200000, 'b')};
  for (const std::string& p : payloads) ws::AppendFrame(bytes, ws::Opcode::kText, p);
  ws::AppendFrame(bytes, ws::Opcode::kPing, "p");
  for (size_t piece : {size_t{1}, size_t{7}, size_t{65536}, size_t{1} << 20}) {
    FrameInput input;
    bool valid = false;
    std::vector<std::string> got = ReadInPieces(input, bytes, piece, &valid);
    ASSERT_TRUE(valid) << input.error();
    ASSERT_EQ(got.size(), payloads.size() + 1) << "piece " << piece;
    for (size_t i = 0; i < payloads.size(); ++i) EXPECT_EQ(got[i], payloads[i]);
    EXPECT_EQ(got.back(), "p");
  }
}

TEST(FrameInputTest, KeepsBytesAppendedAfterTheHandshake) {
  FrameInput input;
  std::string frames;
  ws::AppendFrame(frames, ws::Opcode::kText, R"({"id":1,"ok":true})");
  input.Append(frames);
  std::vector<std::string> got;
  ASSERT_TRUE(input.Drain([&](const ws::Message& m) {
    got.emplace_back(m.payload);
    return true;
  }));
  EXPECT_EQ(got, std::vector<std::string>{R"({"id":1,"ok":true})"});
}

TEST(FrameInputTest, RefusesAMaskedServerFrame) {
  FrameInput input;
  std::string frame;
  ws::AppendMaskedFrame(frame, ws::Opcode::kText, "hi", 0x01020304);
  input.Append(frame);
  EXPECT_FALSE(input.Drain([](const ws::Message&) { return true; }));
  EXPECT_NE(input.error().find("masked"), std::string::npos) << input.error();
}

TEST(LoadDriverWireTest, ReplyMembersAreFoundInServerReplies) {
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
