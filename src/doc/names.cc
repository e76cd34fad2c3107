#include "doc/names.h"

#include <string>

namespace skiff::doc {

Status ValidateTableName(std::string_view table) {
  if (table.empty()) return BadRequest("table name is empty");
  if (table.size() > kMaxTableNameBytes) {
    return BadRequest("table name is longer than 64 bytes");
  }
  for (char c : table) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return BadRequest("table name may only contain A-Z, a-z, 0-9, '_' and '-'");
  }
  return Status::Ok();
}

Status ValidateKey(std::string_view key) {
  if (key.empty()) return BadRequest("key is empty");
  if (key.size() > kMaxKeyBytes) {
    return TooLarge("key is " + std::to_string(key.size()) + " bytes; the limit is 1024");
  }
  if (!IsValidUtf8(key)) return BadRequest("key is not valid UTF-8");
  // PostgreSQL (libpq passes text as C strings) would cut the key at a NUL
  // and name another key; no layer accepts one.
  if (key.find('\0') != std::string_view::npos) return BadRequest("key contains U+0000");
  return Status::Ok();
}

bool IsValidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t len;
    char32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;  // a continuation byte or 0xF8.. where a lead byte belongs
    }
    if (static_cast<size_t>(end - p) < len) return false;
    for (size_t i = 1; i < len; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    static constexpr char32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[len]) return false;       // overlong
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;  // surrogate
    if (cp > 0x10FFFF) return false;
    p += len;
  }
  return true;
}

}  // namespace skiff::doc
