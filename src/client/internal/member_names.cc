#include "client/internal/member_names.h"

#include <cstring>

#include "client/internal/byte_scan.h"

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
  follows_.push_back(kNoGuess);
  return number;
}

int64_t MemberNames::NumberAfter(std::string_view name, uint32_t* after) {
  const uint32_t guess = follows_[*after];
  if (guess != kNoGuess && names_[guess] == name) {
    *after = guess + 1;
    return guess;
  }
  const int64_t number = Number(name);  // may grow follows_
  if (number >= 0) {
    follows_[*after] = static_cast<uint32_t>(number);
    *after = static_cast<uint32_t>(number) + 1;
  }
  return number;
}

void MemberNames::Compact(std::string_view json, std::string* out) {
  const size_t base = out->size();
  out->resize(base + json.size() + kMaxCompactGrowth);
  out->resize(base + Compact(json, out->data() + base));
}

size_t MemberNames::Compact(std::string_view json, char* out) {
  if (json.find(kMark) != std::string_view::npos || (!json.empty() && json[0] == kVerbatim)) {
    out[0] = kVerbatim;
    std::memcpy(out + 1, json.data(), json.size());
    return json.size() + 1;
  }
  // The compact form is never longer than the text (a numbered `"name":` of
  // four bytes or more becomes three at most), so it is written straight
  // into the caller's room.
  char* w = out;
  const auto put = [&w](const char* from, const char* to) {
    std::memcpy(w, from, static_cast<size_t>(to - from));
    w += to - from;
  };
  const char* p = json.data();
  const char* end = p + json.size();
  uint32_t after = 0;  // the slot of follows_ that guesses the next name
  while (p < end) {
    // Everything up to the next string goes as it is.
    const char* quote = ScanToStop<Stops::kQuote>(p, end);
    put(p, quote);
    if (quote == end) break;
    // Most strings have no escape: the first stop is the closing quote. With
    // one, walk on from it, pairing each backslash with what it escapes.
    const char* s = ScanToStop<Stops::kQuoteBackslash>(quote + 1, end);
    const bool escaped = s < end && *s == '\\';
    if (escaped) {
      while (s < end && *s != '"') s += *s == '\\' ? 2 : 1;
    }
    if (s >= end) {  // unterminated: not JSON, keep the rest as it is
      put(quote, end);
      break;
    }
    const char* past = s + 1;  // past the closing quote
    int64_t number = -1;
    if (!escaped && past < end && *past == ':') {
      number = NumberAfter(std::string_view(quote + 1, static_cast<size_t>(s - quote - 1)), &after);
    }
    if (number < 0) {
      put(quote, past);
      p = past;
      continue;
    }
    *w++ = kMark;
    for (auto n = static_cast<uint64_t>(number);; n >>= 7) {
      if (n < 0x80) {
        *w++ = static_cast<char>(n);
        break;
      }
      *w++ = static_cast<char>(0x80 | (n & 0x7F));
    }
    p = past + 1;  // the ':' is implied
  }
  return static_cast<size_t>(w - out);
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
