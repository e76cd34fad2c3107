#include "support/doc_generator.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

namespace skiff::support {
namespace {

using doc::Value;

// Syllables for names: mostly ASCII, with 2-, 3- and 4-byte UTF-8 sequences so
// that every document carries non-ASCII text the way real guild names do.
constexpr std::array<std::string_view, 24> kSyllables = {
    "ka", "ri", "mo", "zen", "lu", "tor", "vik", "sha", "el", "dra", "no", "fen",
    "ä",  "ø",  "ré", "ßa",  "ñu", "Жар", "λό",  "東",  "京", "の",  "🎮",  "✨"};

constexpr std::array<std::string_view, 32> kWords = {
    "welcome", "rules",  "raid",    "tonight", "please", "read",  "the",   "pinned",
    "channel", "before", "posting", "events",  "weekly", "guild", "bank",  "loot",
    "council", "vote",   "new",     "members", "say",    "hello", "in",    "lobby",
    "maps",    "build",  "guide",   "patch",   "notes",  "ping",  "roles", "there"};

constexpr std::array<std::string_view, 6> kLocales = {"en-US", "de-DE", "fr-FR",
                                                      "ja-JP", "pt-BR", "es-ES"};
constexpr std::array<std::string_view, 3> kNotifications = {"all", "mentions", "none"};
constexpr std::array<std::string_view, 8> kFeatures = {
    "COMMUNITY",  "NEWS",          "INVITE_SPLASH",  "BANNER",
    "VANITY_URL", "ANIMATED_ICON", "WELCOME_SCREEN", "THREADS"};
constexpr std::array<std::string_view, 4> kBlockTypes = {"section", "text", "image", "poll"};

// SplitMix64's finaliser: spreads (seed, index) pairs over the seed space so
// neighbouring indexes give unrelated generators.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

constexpr int64_t kEpochMs = 1'600'000'000'000;  // September 2020
constexpr int64_t kYearMs = 365LL * 24 * 3600 * 1000;

}  // namespace

uint64_t DocGenerator::Below(uint64_t n) {
  // Rejection keeps the draw exactly uniform: accept only the top part of the
  // range whose size is a multiple of n.
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  for (;;) {
    const uint64_t r = rng_();
    if (r >= threshold) return r % n;
  }
}

int64_t DocGenerator::Between(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (span == 0) return static_cast<int64_t>(rng_());  // the whole int64 range
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + Below(span));
}

std::string DocGenerator::Snowflake() {
  // 18-19 digit ids, as chat platforms hand out.
  return std::to_string(Between(100'000'000'000'000'000, 1'999'999'999'999'999'999));
}

std::string DocGenerator::Name(size_t min_len, size_t max_len) {
  const size_t syllables = min_len + Below(max_len - min_len + 1);
  std::string name;
  for (size_t i = 0; i < syllables; ++i) {
    // ASCII three times as often as the rest.
    const size_t pick = Chance(75) ? Below(12) : 12 + Below(kSyllables.size() - 12);
    name += kSyllables[pick];
  }
  if (!name.empty() && name[0] >= 'a' && name[0] <= 'z') name[0] = static_cast<char>(name[0] - 32);
  return name;
}

std::string DocGenerator::Word() { return std::string(kWords[Below(kWords.size())]); }

Value DocGenerator::Member() {
  Value roles = Value::array();
  const size_t role_count = Below(4);
  for (size_t i = 0; i < role_count; ++i) {
    roles.push_back(Between(1'000'000'000'000'000, 9'000'000'000'000'000));
  }
  Value member = {
      {"id", Snowflake()},         {"nick", Name(1, 4)},
      {"roles", std::move(roles)}, {"joined_at", kEpochMs + Between(0, 3 * kYearMs)},
      {"xp", Between(0, 250'000)},
  };
  if (Chance(30)) member["muted"] = Chance(50);
  return member;
}

Value DocGenerator::Block(size_t depth) {
  Value block = {{"type", kBlockTypes[Below(kBlockTypes.size())]}};
  std::string text;
  const size_t words = 2 + Below(5);
  for (size_t i = 0; i < words; ++i) {
    if (i > 0) text += ' ';
    text += Word();
  }
  block["text"] = std::move(text);
  if (depth > 1 && Chance(60)) {
    Value children = Value::array();
    children.push_back(Block(depth - 1));
    block["children"] = std::move(children);
  }
  return block;
}

Value DocGenerator::Guild() {
  Value features = Value::array();
  for (std::string_view feature : kFeatures) {
    if (Chance(30)) features.push_back(feature);
  }
  Value settings = {
      {"locale", kLocales[Below(kLocales.size())]},
      {"notifications", kNotifications[Below(kNotifications.size())]},
      {"explicit_filter", Between(0, 2)},
      {"afk_timeout", 60 * Between(1, 60)},
      {"system_channel", Snowflake()},
      {"features", std::move(features)},
  };
  Value members = Value::array();
  const size_t member_count = 2 + Below(3);
  for (size_t i = 0; i < member_count; ++i) members.push_back(Member());
  Value blocks = Value::array();
  const size_t block_count = 1 + Below(2);
  for (size_t i = 0; i < block_count; ++i) blocks.push_back(Block(3));
  return Value{
      {"id", Snowflake()},
      {"name", Name(2, 6)},
      {"owner_id", Snowflake()},
      {"created_at", kEpochMs + Between(0, 4 * kYearMs)},
      {"verified", Chance(20)},
      {"boost_level", Between(0, 3)},
      {"settings", std::move(settings)},
      {"members", std::move(members)},
      {"blocks", std::move(blocks)},
      {"stats",
       {{"messages", Between(0, 10'000'000)},
        {"score", static_cast<double>(Between(0, 1'000'000)) / 100.0},
        {"active_ratio", Unit()}}},
  };
}

Value DocGenerator::LargeGuild(size_t target_bytes) {
  Value guild = Guild();
  size_t bytes = doc::Dump(guild).size();
  Value& members = guild["members"];
  while (bytes < target_bytes) {
    Value member = Member();
    bytes += doc::Dump(member).size() + 1;  // and a comma
    members.push_back(std::move(member));
  }
  return guild;
}

Value DocGenerator::Row() {
  Value tags = Value::array();
  const size_t tag_count = Below(4);
  for (size_t i = 0; i < tag_count; ++i) tags.push_back(Word());
  // One draw per statement: the operands of + are unsequenced.
  std::string title = Word();
  title += ' ';
  title += Word();
  title += ' ';
  title += Name(1, 3);
  // Appended rather than "r" + std::to_string(...): g++ 12 raises a false
  // -Wrestrict on that operator+ in optimised builds.
  std::string id = "r";
  id += std::to_string(rng_() % 100'000'000);
  std::string group = "g";
  group += std::to_string(Below(1000));
  return Value{
      {"id", std::move(id)},       {"group", std::move(group)},
      {"title", std::move(title)}, {"done", Chance(40)},
      {"priority", Between(1, 5)}, {"tags", std::move(tags)},
      {"author", Snowflake()},     {"updated_at", kEpochMs + Between(0, 4 * kYearMs)},
  };
}

Value DocGenerator::Random(size_t max_depth) {
  auto random_string = [this](size_t max_len) {
    std::string s;
    const size_t len = Below(max_len + 1);
    for (size_t i = 0; i < len; ++i) {
      switch (Below(6)) {
        case 0:
          s += kSyllables[Below(kSyllables.size())];
          break;
        case 1: {
          // Characters JSON must escape, including control characters.
          static constexpr std::array<char, 6> kEscaped = {'"', '\\', '\n', '\t', '\x01', '\x1f'};
          s += kEscaped[Below(kEscaped.size())];
          break;
        }
        default:
          s += static_cast<char>(' ' + Below(95));
      }
    }
    return s;
  };
  const uint64_t kind = max_depth == 0 ? Below(8) : Below(10);
  switch (kind) {
    case 0:
      return nullptr;
    case 1:
      return Chance(50);
    case 2:  // small integers, the common case
      return Between(-1000, 1000);
    case 3:  // anywhere in int64
      return Between(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    case 4:  // above INT64_MAX, which nlohmann keeps as unsigned
      return static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1 +
             Below(std::numeric_limits<uint64_t>::max() / 2);
    case 5: {  // doubles: short decimals, and any finite bit pattern
      if (Chance(50)) return static_cast<double>(Between(-100'000, 100'000)) / 64.0;
      for (;;) {
        const uint64_t bits = rng_();
        double d;
        static_assert(sizeof d == sizeof bits);
        std::memcpy(&d, &bits, sizeof d);
        if (std::isfinite(d)) return d;
      }
    }
    case 6:
    case 7:
      return random_string(12);
    case 8: {
      Value array = Value::array();
      const size_t n = Below(5);
      for (size_t i = 0; i < n; ++i) array.push_back(Random(max_depth - 1));
      return array;
    }
    default: {
      Value object = Value::object();
      const size_t n = Below(5);
      for (size_t i = 0; i < n; ++i) object[random_string(6)] = Random(max_depth - 1);
      return object;
    }
  }
}

Value GuildDocument(uint64_t seed, uint64_t index) {
  DocGenerator generator(Mix(seed ^ Mix(index)));
  return generator.Guild();
}

std::string GuildKey(uint64_t index) {
  char key[32];
  std::snprintf(key, sizeof key, "guild:%06llu", static_cast<unsigned long long>(index));
  return key;
}

}  // namespace skiff::support
