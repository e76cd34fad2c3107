// Utf8Validator: an incremental UTF-8 check (RFC 3629) for WebSocket text
// messages, which RFC 6455 requires to be valid UTF-8 as a whole even when a
// code point is split across frames or reads.
//
// Runs of ASCII are skipped eight bytes at a time, since protocol JSON is
// almost all ASCII; anything else goes through a small state machine that
// refuses overlong forms, surrogates (U+D800..U+DFFF) and code points above
// U+10FFFF. A plain value; thread-compatible.
#ifndef SKIFF_WS_UTF8_H_
#define SKIFF_WS_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace skiff::ws {

class Utf8Validator {
 public:
  // Checks the next `size` bytes of the text. False once the text is invalid
  // (and from then on until Reset).
  bool Feed(const char* data, size_t size);
  bool Feed(std::string_view text) { return Feed(text.data(), text.size()); }
  // True when the bytes fed so far do not end inside a code point.
  bool complete() const { return need_ == 0 && !failed_; }
  void Reset() { *this = Utf8Validator(); }

 private:
  uint8_t need_ = 0;    // continuation bytes still expected
  uint8_t low_ = 0x80;  // the range the next continuation byte must lie in
  uint8_t high_ = 0xBF;
  bool failed_ = false;
};

// The whole of `text` is valid UTF-8.
bool IsValidUtf8(std::string_view text);

}  // namespace skiff::ws

#endif  // SKIFF_WS_UTF8_H_
