#include "support/doc_generator.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "doc/names.h"

#include "test/status_matchers.h"

namespace skiff::support {
namespace {

// What the first 100 guilds of seed 1 dump to (see OutputIsPinned).
constexpr size_t kPinnedBytes = 94562;
constexpr uint64_t kPinnedHash = 8298268565564821770ULL;

// FNV-1a, to pin generated output without storing it.
uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

TEST(DocGeneratorTest, MersenneTwisterIsTheStandardOne) {
  // The C++ standard fixes the 10000th output of a default-seeded
  // mt19937_64; the generator's portability rests on it.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ULL);
}

TEST(DocGeneratorTest, BoundedDrawsStayInRange) {
  DocGenerator gen(1);
  for (int i = 0; i < 10000; ++i) {
    EXPECT_LT(gen.Below(7), 7u);
    const int64_t v = gen.Between(-3, 3);
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 3);
    const double u = gen.Unit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
  EXPECT_EQ(gen.Below(1), 0u);
}

TEST(DocGeneratorTest, SameSeedSameBytes) {
  DocGenerator a(42);
  DocGenerator b(42);
  DocGenerator c(43);
  bool any_differs = false;
  for (int i = 0; i < 50; ++i) {
    const std::string x = doc::Dump(a.Guild());
    EXPECT_EQ(x, doc::Dump(b.Guild()));
    any_differs |= x != doc::Dump(c.Guild());
  }
  EXPECT_TRUE(any_differs);
  EXPECT_EQ(doc::Dump(GuildDocument(5, 17)), doc::Dump(GuildDocument(5, 17)));
  EXPECT_NE(doc::Dump(GuildDocument(5, 17)), doc::Dump(GuildDocument(5, 18)));
}

// Deterministic benchmark counters are computed from these documents, so a
// change to the generator must be deliberate: update the pinned values then.
TEST(DocGeneratorTest, OutputIsPinned) {
  std::string all;
  for (uint64_t i = 0; i < 100; ++i) all += doc::Dump(GuildDocument(1, i));
  EXPECT_EQ(all.size(), kPinnedBytes);
  EXPECT_EQ(Fnv1a(all), kPinnedHash);
}

TEST(DocGeneratorTest, GuildsAreAbout940BytesOfValidUtf8) {
  DocGenerator gen(3);
  size_t total = 0;
  constexpr int kCount = 1000;
  for (int i = 0; i < kCount; ++i) {
    const doc::Value guild = gen.Guild();
    const std::string text = doc::Dump(guild);
    total += text.size();
    EXPECT_TRUE(doc::IsValidUtf8(text));
    EXPECT_TRUE(guild["settings"].is_object());
    EXPECT_TRUE(guild["members"].is_array());
    EXPECT_TRUE(guild["members"][0]["roles"].is_array());
    EXPECT_TRUE(guild["blocks"].is_array());
    EXPECT_GT(text.size(), 500u);
    EXPECT_LT(text.size(), 1600u);
  }
  const double average = static_cast<double>(total) / kCount;
  EXPECT_GT(average, 900);
  EXPECT_LT(average, 980);
}

TEST(DocGeneratorTest, GuildsCarryNonAsciiText) {
  DocGenerator gen(4);
  int with_unicode = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string text = doc::Dump(gen.Guild());
    for (unsigned char c : text) {
      if (c >= 0x80) {
        ++with_unicode;
        break;
      }
    }
  }
  EXPECT_GT(with_unicode, 50);
}

TEST(DocGeneratorTest, LargeGuildAndRowSizes) {
  DocGenerator gen(5);
  const std::string large = doc::Dump(gen.LargeGuild());
  EXPECT_GE(large.size(), 870'000u);
  EXPECT_LT(large.size(), 871'000u);

  size_t total = 0;
  for (int i = 0; i < 500; ++i) total += doc::Dump(gen.Row()).size();
  EXPECT_GT(total / 500, 160u);
  EXPECT_LT(total / 500, 240u);
}

TEST(DocGeneratorTest, RandomValuesRespectTheDepth) {
  DocGenerator gen(6);
  for (int i = 0; i < 500; ++i) {
    EXPECT_OK(doc::CheckDepth(gen.Random(5), 5));
  }
}

TEST(DocGeneratorTest, GuildKeysSortInIndexOrder) {
  EXPECT_EQ(GuildKey(42), "guild:000042");
  EXPECT_LT(GuildKey(9), GuildKey(10));
}

}  // namespace
}  // namespace skiff::support
