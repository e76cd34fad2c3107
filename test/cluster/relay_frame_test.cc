// The byte-level rewrites of relayed frames: the id goes in first and
// every other member stays as written; no member can smuggle a second id.
#include "server/cluster/relay_frame.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "doc/json_skip.h"

namespace skiff::server::cluster {
namespace {

TEST(RelayFrameTest, PutsTheIdFirstAndKeepsTheRestAsWritten) {
  EXPECT_EQ(WithId(R"({"id":7,"op":"set","table":"t","key":"k","value":{"a":[1,"}"]}})", 42),
            R"({"id":42,"op":"set","table":"t","key":"k","value":{"a":[1,"}"]}})");
  EXPECT_EQ(WithId(R"( { "op" : "get" , "id" : 1 } )", 3), R"({"id":3,"op" : "get"})");
  EXPECT_EQ(WithId("{}", 9), R"({"id":9})");
}

TEST(RelayFrameTest, DropsEverySpellingOfTheId) {
  EXPECT_EQ(WithId(R"({"id":1,"i\u0064":2,"\u0069d":3,"op":"ping"})", 5),
            R"({"id":5,"op":"ping"})");
  // A name that only looks alike is kept.
  EXPECT_EQ(WithId(R"({"id ":1,"op":"ping"})", 5), R"({"id":5,"id ":1,"op":"ping"})");
}

TEST(RelayFrameTest, DropsNamedMembers) {
  EXPECT_EQ(WithId(R"({"id":1,"ok":true,"found":true,"value":{"x":1}})", 8, {"value", "found"}),
            R"({"id":8,"ok":true})");
}

TEST(RelayFrameTest, RefusesWhatIsNotAnObject) {
  EXPECT_FALSE(WithId("[1,2]", 1).has_value());
  EXPECT_FALSE(WithId(R"({"id":1,"op":"get")", 1).has_value());
  EXPECT_FALSE(WithId(R"({"id":1,"op":"get"} x)", 1).has_value());
  EXPECT_FALSE(WithId(R"({"id":1,"op":"ge)", 1).has_value());
  EXPECT_FALSE(WithId("", 1).has_value());
}

// Values end by the rules the client's reader uses (doc/json_skip.h), so
// a malformed value anywhere refuses the whole frame, as it would there.
TEST(RelayFrameTest, RefusesMalformedValuesAsTheClientReaderDoes) {
  for (std::string_view bad :
       {R"({"id":1,"v":tru})", R"({"id":1,"v":truex})", R"({"id":1,"v":01})", R"({"id":1,"v":1.})",
        R"({"id":1,"v":"\x"})", R"({"id":1,"v":"\uD83D"})", "{\"id\":1,\"v\":\"a\nb\"}",
        R"({"id":1,"v":[1,]})", R"({"id":1,"v":[1}})", R"({"id":1,"v":{"a"}})",
        R"({"id":1,"v":{a:1}})", R"({"i\x":1})", R"({"id":1,"v":})"}) {
    EXPECT_FALSE(WithId(bad, 1).has_value()) << bad;
  }
}

TEST(RelayFrameTest, BoundsNestingAsTheClientReaderDoes) {
  auto frame = [](int levels) {
    return R"({"id":1,"v":)" + std::string(levels, '[') + std::string(levels, ']') + "}";
  };
  // The frame itself is the first level.
  EXPECT_TRUE(WithId(frame(doc::kMaxSkipDepth), 2).has_value());
  EXPECT_FALSE(WithId(frame(doc::kMaxSkipDepth + 1), 2).has_value());
}

TEST(RelayFrameTest, ReadsIdsAndMovedReplies) {
  EXPECT_EQ(IdOf(R"({"id":18446744073709551615,"ok":true})"), 18446744073709551615ull);
  EXPECT_FALSE(IdOf(R"({"id":null,"ok":false})").has_value());
  EXPECT_FALSE(IdOf(R"({"id":"1"})").has_value());
  EXPECT_EQ(MemberText(R"({"a":{"b":[1,2]},"c":3})", "a"), R"({"b":[1,2]})");
  EXPECT_TRUE(IsMovedReply(R"({"id":1,"ok":false,"error":{"code":"moved","message":"m"}})"));
  EXPECT_FALSE(IsMovedReply(R"({"id":1,"ok":false,"error":{"code":"unavailable"}})"));
  EXPECT_FALSE(IsMovedReply(R"({"id":1,"ok":true,"value":{"code":"moved"}})"));
}

}  // namespace
}  // namespace skiff::server::cluster
