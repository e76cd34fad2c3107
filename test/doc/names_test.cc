#include "doc/names.h"

#include <string>

#include <gtest/gtest.h>

#include "test/status_matchers.h"

namespace skiff::doc {
namespace {

TEST(TableNameTest, AcceptsTheAllowedAlphabet) {
  EXPECT_OK(ValidateTableName("a"));
  EXPECT_OK(ValidateTableName("Guilds_2024-eu"));
  EXPECT_OK(ValidateTableName(std::string(64, 'x')));
}

TEST(TableNameTest, RejectsEmptyLongAndForeignCharacters) {
  EXPECT_EQ(ValidateTableName("").code(), StatusCode::kBadRequest);
  EXPECT_EQ(ValidateTableName(std::string(65, 'x')).code(), StatusCode::kBadRequest);
  for (std::string bad : {"a b", "a.b", "a/b", "täble", "a:b", "*"}) {
    EXPECT_EQ(ValidateTableName(bad).code(), StatusCode::kBadRequest) << bad;
  }
  // An embedded NUL must not end the name early.
  EXPECT_EQ(ValidateTableName(std::string("ab\0", 3)).code(), StatusCode::kBadRequest);
}

TEST(KeyTest, AcceptsUtf8UpToOneKibibyte) {
  EXPECT_OK(ValidateKey("k"));
  EXPECT_OK(ValidateKey("guild:東京/🎮 with spaces"));
  EXPECT_OK(ValidateKey(std::string(kMaxKeyBytes, 'k')));
}

TEST(KeyTest, RejectsEmptyTooLongAndInvalidUtf8) {
  EXPECT_EQ(ValidateKey("").code(), StatusCode::kBadRequest);
  EXPECT_EQ(ValidateKey(std::string(kMaxKeyBytes + 1, 'k')).code(), StatusCode::kTooLarge);
  EXPECT_EQ(ValidateKey("bad\xff").code(), StatusCode::kBadRequest);
}

TEST(Utf8Test, AcceptsEveryEncodingLength) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xC2\x80"));          // U+0080, smallest 2-byte
  EXPECT_TRUE(IsValidUtf8("\xDF\xBF"));          // U+07FF
  EXPECT_TRUE(IsValidUtf8("\xE0\xA0\x80"));      // U+0800, smallest 3-byte
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));      // U+D7FF, just below surrogates
  EXPECT_TRUE(IsValidUtf8("\xEE\x80\x80"));      // U+E000, just above them
  EXPECT_TRUE(IsValidUtf8("\xEF\xBF\xBF"));      // U+FFFF
  EXPECT_TRUE(IsValidUtf8("\xF0\x90\x80\x80"));  // U+10000, smallest 4-byte
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF, the last code point
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));
}

TEST(Utf8Test, RejectsMalformedSequences) {
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xC2"));              // truncated 2-byte
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // truncated 3-byte
  EXPECT_FALSE(IsValidUtf8("\xF0\x9F\x8E"));      // truncated 4-byte
  EXPECT_FALSE(IsValidUtf8("\xC2\x41"));          // continuation missing
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xC1\xBF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xE0\x9F\xBF"));      // overlong 3-byte
  EXPECT_FALSE(IsValidUtf8("\xF0\x8F\xBF\xBF"));  // overlong 4-byte
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // U+D800, a surrogate
  EXPECT_FALSE(IsValidUtf8("\xED\xBF\xBF"));      // U+DFFF
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xF8\x88\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("ok\xE2\x82"));  // good text, bad tail
}

TEST(KeyTest, RejectsEmbeddedNul) {
  EXPECT_EQ(ValidateKey(std::string("victim\0x", 8)).code(), StatusCode::kBadRequest);
  EXPECT_EQ(ValidateKey(std::string("\0", 1)).code(), StatusCode::kBadRequest);
}

}  // namespace
}  // namespace skiff::doc
