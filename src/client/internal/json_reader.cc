#include "client/internal/json_reader.h"

#include "client/internal/byte_scan.h"

namespace skiff::client::internal {
namespace {

// Deeper values are refused rather than risking the stack.
constexpr int kMaxDepth = 256;
constexpr int kMaxLevels = 64;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// What a one-letter escape stands for; '\0' when it is none ('u' aside).
char Unescaped(char e) {
  switch (e) {
    case '"':
    case '\\':
    case '/':
      return e;
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    default:
      return '\0';
  }
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

bool JsonReader::AtEnd() {
  SkipWhitespace();
  return p_ == end_;
}

bool JsonReader::Open(char c) {
  if (level_ + 1 >= kMaxLevels || !Take(c)) return false;
  ++level_;
  first_ |= uint64_t{1} << level_;
  return true;
}

bool JsonReader::Step(char close, bool* done) {
  if (level_ < 0) return false;
  const uint64_t bit = uint64_t{1} << level_;
  const bool first = (first_ & bit) != 0;
  first_ &= ~bit;
  if (Take(close)) {
    *done = true;
    --level_;
    return true;
  }
  *done = false;
  return first || Take(',');
}

bool JsonReader::NextMember(std::string_view* name, bool* done) {
  if (!Step('}', done)) return false;
  return *done || (String(name) && Take(':'));
}

bool JsonReader::NextElement(bool* done) { return Step(']', done); }

bool JsonReader::Hex4(uint32_t* out) {
  if (end_ - p_ < 4) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = *p_++;
    v <<= 4;
    if (IsDigit(c)) {
      v |= static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v |= static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      v |= static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
  }
  *out = v;
  return true;
}

bool JsonReader::String(std::string* out) {
  if (!Take('"')) return false;
  out->clear();
  return StringBody(out);
}

bool JsonReader::String(std::string_view* out) {
  if (!Take('"')) return false;
  const char* start = p_;
  p_ = ScanToStop<Stops::kQuoteBackslashControl>(p_, end_);
  if (p_ < end_ && *p_ == '"') {
    *out = std::string_view(start, static_cast<size_t>(p_++ - start));
    return true;
  }
  unescaped_.assign(start, p_);
  if (!StringBody(&unescaped_)) return false;
  *out = unescaped_;
  return true;
}

bool JsonReader::StringBody(std::string* out) {
  for (;;) {
    // Copy the run up to the next quote, escape or control character at once.
    const char* run = p_;
    p_ = ScanToStop<Stops::kQuoteBackslashControl>(p_, end_);
    if (out != nullptr) out->append(run, p_);
    if (p_ == end_ || static_cast<unsigned char>(*p_) < 0x20) return false;
    if (*p_++ == '"') return true;
    if (p_ == end_) return false;
    const char e = *p_++;
    if (e != 'u') {
      const char c = Unescaped(e);
      if (c == '\0') return false;
      if (out != nullptr) out->push_back(c);
      continue;
    }
    uint32_t cp;
    if (!Hex4(&cp)) return false;
    if (cp >= 0xD800 && cp < 0xDC00) {
      // A high surrogate must be followed by its low half.
      uint32_t low;
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      if (!Hex4(&low) || low < 0xDC00 || low >= 0xE000) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    } else if (cp >= 0xDC00 && cp < 0xE000) {
      return false;
    }
    if (out != nullptr) AppendUtf8(cp, out);
  }
}

bool JsonReader::Unsigned(uint64_t* out) {
  SkipWhitespace();
  if (p_ == end_ || !IsDigit(*p_)) return false;
  if (*p_ == '0' && p_ + 1 < end_ && IsDigit(p_[1])) return false;
  uint64_t v = 0;
  while (p_ < end_ && IsDigit(*p_)) {
    const uint64_t d = static_cast<uint64_t>(*p_ - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
    ++p_;
  }
  // A fraction or exponent makes it something else than an unsigned integer.
  if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
  *out = v;
  return true;
}

bool JsonReader::Null() {
  SkipWhitespace();
  return SkipLiteral("null");
}

bool JsonReader::SkipLiteral(std::string_view word) {
  if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
    return false;
  }
  p_ += word.size();
  return true;
}

bool JsonReader::SkipString() {
  ++p_;  // the opening quote
  return StringBody(nullptr);
}

bool JsonReader::SkipNumber() {
  if (p_ < end_ && *p_ == '-') ++p_;
  if (p_ == end_ || !IsDigit(*p_)) return false;
  if (*p_ == '0') {
    ++p_;
  } else {
    while (p_ < end_ && IsDigit(*p_)) ++p_;
  }
  if (p_ < end_ && *p_ == '.') {
    ++p_;
    if (p_ == end_ || !IsDigit(*p_)) return false;
    while (p_ < end_ && IsDigit(*p_)) ++p_;
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (p_ == end_ || !IsDigit(*p_)) return false;
    while (p_ < end_ && IsDigit(*p_)) ++p_;
  }
  return true;
}

bool JsonReader::SkipValue(int depth) {
  if (depth > kMaxDepth) return false;
  SkipWhitespace();
  if (p_ == end_) return false;
  switch (*p_) {
    case '"':
      return SkipString();
    case 't':
      return SkipLiteral("true");
    case 'f':
      return SkipLiteral("false");
    case 'n':
      return SkipLiteral("null");
    case '{':
    case '[': {
      const char close = *p_ == '{' ? '}' : ']';
      ++p_;
      if (Take(close)) return true;
      do {
        if (close == '}') {
          SkipWhitespace();
          if (p_ == end_ || *p_ != '"' || !SkipString() || !Take(':')) return false;
        }
        if (!SkipValue(depth + 1)) return false;
      } while (Take(','));
      return Take(close);
    }
    default:
      return SkipNumber();
  }
}

bool JsonReader::Skip(std::string_view* span) {
  SkipWhitespace();
  const char* start = p_;
  if (!SkipValue(0)) return false;
  if (span != nullptr) *span = std::string_view(start, static_cast<size_t>(p_ - start));
  return true;
}

}  // namespace skiff::client::internal
