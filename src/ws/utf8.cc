#include "ws/utf8.h"

#include <cstring>

namespace skiff::ws {
namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ULL;

}  // namespace

bool Utf8Validator::Feed(const char* data, size_t size) {
  if (failed_) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  size_t i = 0;
  while (i < size) {
    if (need_ == 0) {
      // Between code points: skip ASCII a word at a time.
      while (i + 8 <= size) {
        uint64_t word;
        std::memcpy(&word, p + i, sizeof word);
        if (word & kHighBits) break;
        i += 8;
      }
      if (i == size) break;
      const unsigned char c = p[i++];
      if (c < 0x80) continue;
      low_ = 0x80;
      high_ = 0xBF;
      if (c >= 0xC2 && c <= 0xDF) {
        need_ = 1;
      } else if (c >= 0xE0 && c <= 0xEF) {
        need_ = 2;
        if (c == 0xE0) low_ = 0xA0;   // no overlong three-byte forms
        if (c == 0xED) high_ = 0x9F;  // no surrogates
      } else if (c >= 0xF0 && c <= 0xF4) {
        need_ = 3;
        if (c == 0xF0) low_ = 0x90;   // no overlong four-byte forms
        if (c == 0xF4) high_ = 0x8F;  // nothing above U+10FFFF
      } else {
        failed_ = true;  // a stray continuation byte, C0, C1 or F5..FF
        return false;
      }
      continue;
    }
    const unsigned char c = p[i++];
    if (c < low_ || c > high_) {
      failed_ = true;
      return false;
    }
    low_ = 0x80;
    high_ = 0xBF;
    --need_;
  }
  return true;
}

bool IsValidUtf8(std::string_view text) {
  Utf8Validator v;
  return v.Feed(text) && v.complete();
}

}  // namespace skiff::ws
