#include "doc/pack.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zstd.h>

#include "doc/pack_dictionary.h"
#include "support/doc_generator.h"

#include "test/status_matchers.h"

namespace skiff::doc {
namespace {

void ExpectRoundTrip(const Value& v) {
  const std::string packed = Pack(v);
  Result<Value> back = Unpack(packed);
  ASSERT_OK(back);
  ASSERT_EQ(*back, v) << Dump(v);
  ASSERT_EQ(Dump(*back), Dump(v));
}

TEST(PackTest, RoundTripsHandPickedValues) {
  for (const char* text :
       {"null", "true", "0", "-1", "18446744073709551615", "-9223372036854775808", "1.5", "-0.0",
        "1e-320", "\"\"", "[]", "{}", R"({"":{"":[[],{}]}})", R"(["é東🎮\u0000\n"])"}) {
    ExpectRoundTrip(Value::parse(text));
  }
}

// Property: Unpack(Pack(v)) == v over a few hundred seeded random values with
// unicode, escapes, integers across int64/uint64, doubles, empty containers
// and nesting.
TEST(PackTest, RoundTripsRandomValues) {
  support::DocGenerator gen(2024);
  for (int i = 0; i < 400; ++i) {
    SCOPED_TRACE(i);
    ExpectRoundTrip(gen.Random(i % 2 == 0 ? 4 : 12));
  }
}

TEST(PackTest, RoundTripsGuildsRowsAndALargeDocument) {
  support::DocGenerator gen(7);
  for (int i = 0; i < 200; ++i) {
    ExpectRoundTrip(gen.Guild());
    ExpectRoundTrip(gen.Row());
  }
  ExpectRoundTrip(gen.LargeGuild());
}

TEST(PackTest, CompressesGuildsAndLeavesTinyValuesRaw) {
  support::DocGenerator gen(8);
  const Value guild = gen.Guild();
  const std::string packed = Pack(guild);
  EXPECT_EQ(packed[0], '\x02');
  EXPECT_LT(packed.size(), Dump(guild).size() * 3 / 4);
  const std::string tiny = Pack(Value::parse(R"({"a":1})"));
  EXPECT_EQ(tiny, std::string("\x01\x81\xA1"
                              "a\x01",
                              5));
}

TEST(PackTest, UnpackRejectsEmptyUnknownAndTruncatedInput) {
  EXPECT_EQ(Unpack("").status().code(), StatusCode::kInternal);
  EXPECT_EQ(Unpack("\x7F\x01").status().code(), StatusCode::kInternal);
  EXPECT_EQ(Unpack("\x02").status().code(), StatusCode::kInternal);

  support::DocGenerator gen(9);
  for (const Value& v : {gen.Guild(), Value::parse(R"({"a":[1,2,"three"]})")}) {
    const std::string packed = Pack(v);
    for (size_t len = 0; len < packed.size(); ++len) {
      Result<Value> r = Unpack(std::string_view(packed).substr(0, len));
      ASSERT_FALSE(r.ok()) << "prefix of " << len << " bytes";
      EXPECT_EQ(r.status().code(), StatusCode::kInternal);
    }
  }
}

// Arbitrary bytes must never crash Unpack; whatever it returns is either an
// error or a value that packs again.
TEST(PackTest, UnpackRefusesAFrameFarLargerThanAnyDocument) {
  // 64 MiB of MessagePack nils compress to a few KB; decoding them would mean
  // 64 M values. Packed bytes come only from Pack, so this is corruption.
  const std::string nils(64u << 20, '\xC0');
  std::string frame(ZSTD_compressBound(nils.size()), '\0');
  const size_t n = ZSTD_compress(frame.data(), frame.size(), nils.data(), nils.size(), 1);
  ASSERT_FALSE(ZSTD_isError(n));
  frame.resize(n);
  const std::string packed = std::string(1, '\x02') + frame.substr(4);  // tag, no magic
  ASSERT_LT(packed.size(), 64u * 1024);
  auto unpacked = Unpack(packed);
  ASSERT_FALSE(unpacked.ok());
  EXPECT_EQ(unpacked.status().code(), StatusCode::kInternal);
}

TEST(PackTest, UnpackSurvivesArbitraryBytes) {
  std::mt19937_64 rng(77);
  support::DocGenerator gen(10);
  const std::string guild = Pack(gen.Guild());
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(rng() % 64);
      for (char& c : bytes) c = static_cast<char>(rng());
      if (!bytes.empty()) bytes[0] = static_cast<char>(1 + rng() % 5);  // a known format
    } else {
      bytes = guild;  // a real packed document with a few bytes corrupted
      for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
        bytes[1 + rng() % (bytes.size() - 1)] ^= static_cast<char>(1 + rng() % 255);
      }
    }
    Result<Value> r = Unpack(bytes);
    if (!r.ok()) {
      ++errors;
      EXPECT_EQ(r.status().code(), StatusCode::kInternal);
    } else {
      Result<Value> again = Unpack(Pack(*r));
      ASSERT_OK(again);
    }
  }
  EXPECT_GT(errors, 10000);
}

// PackText packs the text itself (no tree): the text comes back byte for
// byte, and Unpack reads it as Parse would.
TEST(PackTextTest, RoundTripsTextExactly) {
  support::DocGenerator gen(11);
  std::vector<std::string> texts = {"2", "null", "{}", R"({"a":[1,2,"three"]})",
                                    R"(["é東🎮\u0000\n"])"};
  for (int i = 0; i < 100; ++i) texts.push_back(Dump(gen.Guild()));
  for (int i = 0; i < 100; ++i) texts.push_back(Dump(gen.Random(i % 2 == 0 ? 4 : 12)));
  texts.push_back(Dump(gen.LargeGuild()));
  for (const std::string& text : texts) {
    const std::string packed = PackText(text);
    ASSERT_TRUE(HoldsText(packed));
    EXPECT_EQ(DictionaryIdOf(packed), 0u);
    Result<std::string> back = UnpackText(packed);
    ASSERT_OK(back);
    ASSERT_EQ(*back, text);
    Result<Value> tree = Unpack(packed);
    ASSERT_OK(tree);
    ASSERT_EQ(*tree, *Parse(text, Limits{1024, SIZE_MAX}));
  }
}

TEST(PackTextTest, CompressesGuildTextAndKeepsTinyTextAsItIs) {
  support::DocGenerator gen(12);
  const std::string guild = Dump(gen.Guild());
  const std::string packed = PackText(guild);
  EXPECT_EQ(packed[0], '\x03');
  EXPECT_LT(packed.size(), guild.size() * 3 / 4);
  EXPECT_EQ(PackText("2"), std::string("\x04"
                                       "2"));
  EXPECT_FALSE(HoldsText(Pack(gen.Guild())));
  EXPECT_FALSE(UnpackText(Pack(gen.Guild())).ok());
}

TEST(PackTextTest, UnpackTextRejectsTruncatedFrames) {
  support::DocGenerator gen(13);
  const std::string packed = PackText(Dump(gen.Guild()));
  for (size_t len = 0; len < packed.size(); ++len) {
    Result<std::string> r = UnpackText(std::string_view(packed).substr(0, len));
    ASSERT_FALSE(r.ok()) << "prefix of " << len << " bytes";
    EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  }
}

std::vector<std::string> GuildTexts(uint64_t seed, int count) {
  std::vector<std::string> texts;
  for (int i = 0; i < count; ++i) texts.push_back(Dump(support::GuildDocument(seed, i)));
  return texts;
}

// A dictionary trained on some guilds packs other guilds in about half the
// bytes, and the bytes name it: they unpack with it and with nothing else.
TEST(PackTextTest, ADictionaryHalvesGuildsAndIsNeededToUnpack) {
  Result<std::shared_ptr<const PackDictionary>> dictionary =
      PackDictionary::Train(GuildTexts(1, 1000), 7);
  ASSERT_OK(dictionary);
  Result<std::shared_ptr<const PackDictionary>> other =
      PackDictionary::Train(GuildTexts(3, 1000), 8);
  ASSERT_OK(other);
  size_t plain = 0;
  size_t with_dictionary = 0;
  for (const std::string& text : GuildTexts(2, 200)) {
    const std::string packed = PackText(text, dictionary->get());
    plain += PackText(text).size();
    with_dictionary += packed.size();
    ASSERT_TRUE(HoldsText(packed));
    ASSERT_EQ(DictionaryIdOf(packed), 7u);
    Result<std::string> back = UnpackText(packed, dictionary->get());
    ASSERT_OK(back);
    ASSERT_EQ(*back, text);
    EXPECT_EQ(UnpackText(packed).status().code(), StatusCode::kInternal);
    EXPECT_EQ(UnpackText(packed, other->get()).status().code(), StatusCode::kInternal);
    EXPECT_EQ(Unpack(packed).status().code(), StatusCode::kInternal);
  }
  EXPECT_LT(with_dictionary, plain * 6 / 10);
}

TEST(PackTextTest, TooFewSamplesTrainNoDictionary) {
  EXPECT_FALSE(PackDictionary::Train({"{}", "[]"}, 1).ok());
}

}  // namespace
}  // namespace skiff::doc
