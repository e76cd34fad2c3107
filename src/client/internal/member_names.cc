#include "client/internal/member_names.h"

#include <cstring>

namespace skiff::client::internal {
namespace {

constexpr char kMark = '\x01';      // a numbered name follows (varint)
constexpr char kVerbatim = '\x02';  // the rest is the text as given

}  // namespace

int64_t MemberNames::Number(std::string_view name) {
  auto it = numbers_.find(name);
  if (it != numbers_.end()) return it->second;
  if (names_.size() >= kMaxNames) return -1;
  const auto number = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  numbers_.emplace(names_.back(), number);
  return number;
}

void MemberNames::Compact(std::string_view json, std::string* out) {
  if (json.find(kMark) != std::string_view::npos || (!json.empty() && json[0] == kVerbatim)) {
    out->push_back(kVerbatim);
    out->append(json);
    return;
  }
  const char* p = json.data();
  const char* end = p + json.size();
  while (p < end) {
    // Everything up to the next string goes as it is.
    const char* quote = static_cast<const char*>(memchr(p, '"', static_cast<size_t>(end - p)));
    if (quote == nullptr) {
      out->append(p, end);
      return;
    }
    out->append(p, quote);
    // Most strings have no escape: the first quote closes them. With one,
    // walk from the first escape, pairing each with what it escapes.
    const char* s =
        static_cast<const char*>(memchr(quote + 1, '"', static_cast<size_t>(end - quote - 1)));
    const char* backslash =
        s == nullptr
            ? nullptr
            : static_cast<const char*>(memchr(quote + 1, '\\', static_cast<size_t>(s - quote - 1)));
    const bool escaped = backslash != nullptr;
    if (escaped) {
      s = backslash;
      while (s < end && *s != '"') s += *s == '\\' ? 2 : 1;
    }
    if (s == nullptr || s >= end) {  // unterminated: not JSON, keep the rest as it is
      out->append(quote, end);
      return;
    }
    const char* after = s + 1;  // past the closing quote
    int64_t number = -1;
    if (!escaped && after < end && *after == ':') {
      number = Number(std::string_view(quote + 1, static_cast<size_t>(s - quote - 1)));
    }
    if (number < 0) {
      out->append(quote, after);
      p = after;
      continue;
    }
    out->push_back(kMark);
    for (auto n = static_cast<uint64_t>(number);; n >>= 7) {
      if (n < 0x80) {
        out->push_back(static_cast<char>(n));
        break;
      }
      out->push_back(static_cast<char>(0x80 | (n & 0x7F)));
    }
    p = after + 1;  // the ':' is implied
  }
}

void MemberNames::Expand(std::string_view compact, std::string* out) const {
  if (!compact.empty() && compact[0] == kVerbatim) {
    out->append(compact.substr(1));
    return;
  }
  const char* p = compact.data();
  const char* end = p + compact.size();
  while (p < end) {
    const char* mark = static_cast<const char*>(memchr(p, kMark, static_cast<size_t>(end - p)));
    if (mark == nullptr) {
      out->append(p, end);
      return;
    }
    out->append(p, mark);
    p = mark + 1;
    uint64_t number = 0;
    for (int shift = 0; p < end; shift += 7) {
      const auto byte = static_cast<unsigned char>(*p++);
      number |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (byte < 0x80) break;
    }
    if (number >= names_.size()) continue;  // not made by Compact: nothing to stand for
    out->push_back('"');
    out->append(names_[number]);
    out->append("\":");
  }
}

}  // namespace skiff::client::internal
