#include "server/internal/wire/request_scanner.h"

#include <cstdint>
#include <string>

#include "doc/json_number.h"
#include "doc/names.h"

namespace skiff::server::internal {
namespace {

bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Validates strict JSON (RFC 8259, UTF-8 per RFC 3629) without building
// anything. Every method returns false both for invalid text and for valid
// text the fast path leaves to the full parser; the caller cannot tell the
// two apart and does not need to.
class Scanner {
 public:
  Scanner(std::string_view text, size_t max_depth)
      : p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth) {}

  const char* pos() const { return p_; }
  char Peek() const { return p_ < end_ ? *p_ : '\0'; }

  void SkipWhitespace() {
    while (p_ < end_ && IsWhitespace(*p_)) ++p_;
  }

  // Skips whitespace, then takes `c` if it is next.
  bool Take(char c) {
    SkipWhitespace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  bool AtEnd() {
    SkipWhitespace();
    return p_ == end_;
  }

  // A string at the cursor. `*contents` is the text between the quotes;
  // `*escaped` says whether it held a backslash escape (then `contents` is
  // not the string's value). \u escapes are left to the full parser: their
  // surrogate rules are where a second validator would most likely differ.
  bool String(std::string_view* contents, bool* escaped) {
    SkipWhitespace();
    if (p_ == end_ || *p_ != '"') return false;
    const char* start = ++p_;
    *escaped = false;
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *contents = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20) return false;  // control characters must be escaped
      if (c == '\\') {
        if (end_ - p_ < 2) return false;
        switch (p_[1]) {
          case '"':
          case '\\':
          case '/':
          case 'b':
          case 'f':
          case 'n':
          case 'r':
          case 't':
            *escaped = true;
            p_ += 2;
            continue;
          default:
            return false;
        }
      }
      if (c < 0x80) {
        ++p_;
      } else if (!Utf8Sequence()) {
        return false;
      }
    }
    return false;  // unterminated
  }

  // A number at the cursor, as `*token`. Exponents and tokens over 20
  // characters are left to the full parser, which may refuse them as out
  // of range for a double.
  bool Number(std::string_view* token) {
    SkipWhitespace();
    const doc::NumberScan scan = doc::ScanNumber(p_, end_);
    if (scan.end == nullptr || scan.exponent || scan.end - p_ > 20) return false;
    *token = std::string_view(p_, static_cast<size_t>(scan.end - p_));
    p_ = scan.end;
    return true;
  }

  // Any value at the cursor, nested inside `depth` arrays or objects.
  bool Value(size_t depth) {
    SkipWhitespace();
    if (p_ == end_) return false;
    std::string_view ignored;
    bool escaped = false;
    switch (*p_) {
      case '{':
        return Object(depth + 1);
      case '[':
        return Array(depth + 1);
      case '"':
        return String(&ignored, &escaped);
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        return Number(&ignored);
    }
  }

 private:
  // Objects with a repeated member name are left to the full parser (which
  // keeps the last), so text the fast path keeps never holds one. Names are
  // compared as written; an escaped name could equal another one written
  // plainly, so those go to the full parser too, as do objects too large to
  // check cheaply.
  bool Object(size_t depth) {
    if (depth > max_depth_) return false;
    ++p_;  // '{'
    if (Take('}')) return true;
    constexpr size_t kMaxMembers = 64;
    std::string_view names[kMaxMembers];
    size_t count = 0;
    do {
      std::string_view name;
      bool escaped = false;
      if (!String(&name, &escaped) || escaped || count == kMaxMembers) return false;
      for (size_t i = 0; i < count; ++i) {
        if (names[i] == name) return false;
      }
      names[count++] = name;
      if (!Take(':') || !Value(depth)) return false;
    } while (Take(','));
    return Take('}');
  }

  bool Array(size_t depth) {
    if (depth > max_depth_) return false;
    ++p_;  // '['
    if (Take(']')) return true;
    do {
      if (!Value(depth)) return false;
    } while (Take(','));
    return Take(']');
  }

  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  // One multi-byte UTF-8 sequence at the cursor (RFC 3629, section 4):
  // no overlong forms, no surrogates, nothing above U+10FFFF.
  bool Utf8Sequence() {
    const auto* s = reinterpret_cast<const unsigned char*>(p_);
    const size_t left = static_cast<size_t>(end_ - p_);
    const unsigned char b0 = s[0];
    size_t length = 0;
    unsigned char low = 0x80;  // allowed range of the second byte
    unsigned char high = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      length = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      length = 3;
      if (b0 == 0xE0) low = 0xA0;   // overlong
      if (b0 == 0xED) high = 0x9F;  // surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      length = 4;
      if (b0 == 0xF0) low = 0x90;   // overlong
      if (b0 == 0xF4) high = 0x8F;  // above U+10FFFF
    } else {
      return false;
    }
    if (left < length || s[1] < low || s[1] > high) return false;
    for (size_t i = 2; i < length; ++i) {
      if (!IsContinuation(s[i])) return false;
    }
    p_ += length;
    return true;
  }

  const char* p_;
  const char* const end_;
  const size_t max_depth_;
};

// The request members the fast path knows. A member it does not know is
// validated and ignored, as DecodeRequest ignores it.
enum Member : unsigned { kId, kOp, kTable, kKey, kValue, kData, kPatch, kDelta, kPath, kOther };

// Called for every member of every request, so it picks by length first.
Member MemberOf(std::string_view name) {
  switch (name.size()) {
    case 2:
      return name == "id" ? kId : name == "op" ? kOp : kOther;
    case 3:
      return name == "key" ? kKey : kOther;
    case 4:
      return name == "data" ? kData : name == "path" ? kPath : kOther;
    case 5:
      return name == "table"   ? kTable
             : name == "value" ? kValue
             : name == "patch" ? kPatch
             : name == "delta" ? kDelta
                               : kOther;
    default:
      return kOther;
  }
}

struct Members {
  std::string_view text[kOther];  // the raw JSON of each member present
  unsigned present = 0;           // bit per Member
  unsigned escaped = 0;           // bit per Member: a string with an escape

  bool Has(Member m) const { return (present & (1u << m)) != 0; }
};

// A string member without escapes, as its value.
bool PlainString(const Members& m, Member which, std::string_view* out) {
  if (!m.Has(which) || (m.escaped & (1u << which)) != 0) return false;
  const std::string_view text = m.text[which];
  if (text.size() < 2 || text.front() != '"') return false;
  *out = text.substr(1, text.size() - 2);
  return true;
}

bool PlainString(const Members& m, Member which, std::string* out) {
  std::string_view view;
  if (!PlainString(m, which, &view)) return false;
  out->assign(view);
  return true;
}

// The request id: an unsigned integer that fits 64 bits for certain.
bool Id(const Members& m, uint64_t* id) {
  if (!m.Has(kId)) return false;
  const std::string_view text = m.text[kId];
  if (text.empty() || text.size() > 19) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (!IsDigit(c)) return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *id = value;
  return true;
}

bool TableAndKey(const Members& m, Request* r) {
  return PlainString(m, kTable, &r->table) && doc::ValidateTableName(r->table).ok() &&
         PlainString(m, kKey, &r->key) && doc::ValidateKey(r->key).ok();
}

// Parses a member's text as a document nested one level below the request.
bool Document(const Members& m, Member which, const doc::Limits& limits, Request* r) {
  if (!m.Has(which) || limits.max_depth < 1) return false;
  doc::Limits inner = limits;
  inner.max_depth = limits.max_depth - 1;
  Result<doc::Value> value = doc::Parse(m.text[which], inner);
  if (!value.ok()) return false;
  r->value = std::move(*value);
  r->raw_value = m.text[which];
  return true;
}

// add's delta; small integers skip the parser. Typed as the full parser
// types them: unsigned when not negative.
bool Delta(const Members& m, const doc::Limits& limits, Request* r) {
  if (!m.Has(kDelta)) return false;
  const std::string_view text = m.text[kDelta];
  const bool negative = !text.empty() && text[0] == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  bool small_integer = !digits.empty() && digits.size() <= 18;
  for (char c : digits) small_integer = small_integer && IsDigit(c);
  if (!small_integer) {
    return Document(m, kDelta, limits, r) && r->value.is_number();
  }
  int64_t value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  r->value = negative ? doc::Value(-value) : doc::Value(static_cast<uint64_t>(value));
  r->raw_value = text;
  return true;
}

// add's path: an array of plain strings, within the depth limit.
bool Path(const Members& m, const doc::Limits& limits, Request* r) {
  if (!m.Has(kPath)) return true;  // the document itself
  Scanner s(m.text[kPath], limits.max_depth);
  if (!s.Take('[')) return false;
  if (!s.Take(']')) {
    do {
      std::string_view part;
      bool escaped = false;
      if (!s.String(&part, &escaped) || escaped) return false;
      r->path.emplace_back(part);
    } while (s.Take(','));
    if (!s.Take(']')) return false;
  }
  return s.AtEnd() && r->path.size() < limits.max_depth;
}

bool Fields(const Members& m, const doc::Limits& limits, Request* r) {
  switch (r->op) {
    case Op::kPing:
    case Op::kLogout:
      return true;
    case Op::kEcho:
      // Echoed as sent: the scan has validated it, so no parse is needed.
      if (!m.Has(kData)) return false;
      r->raw_value = m.text[kData];
      return true;
    case Op::kGet:
    case Op::kHas:
    case Op::kDelete:
      return TableAndKey(m, r);
    case Op::kSet:
      // Kept as text: the cache holds it as sent until an op needs a tree.
      if (!m.Has(kValue) || !TableAndKey(m, r)) return false;
      r->raw_value = m.text[kValue];
      return true;
    case Op::kMerge:
      return TableAndKey(m, r) && Document(m, kPatch, limits, r);
    case Op::kAdd:
      return TableAndKey(m, r) && Path(m, limits, r) && Delta(m, limits, r);
    default:
      return false;  // login, all, stats and sync take the full decoder
  }
}

bool FastOp(std::string_view name, Op* op) {
  static constexpr std::pair<std::string_view, Op> kFast[] = {
      {"get", Op::kGet},     {"set", Op::kSet},       {"add", Op::kAdd},
      {"has", Op::kHas},     {"echo", Op::kEcho},     {"ping", Op::kPing},
      {"merge", Op::kMerge}, {"delete", Op::kDelete}, {"logout", Op::kLogout}};
  for (const auto& [n, o] : kFast) {
    if (n == name) {
      *op = o;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string CompactJson(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < json.size()) {
        out.push_back(json[++i]);  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (!IsWhitespace(c)) {
      out.push_back(c);
      in_string = c == '"';
    }
  }
  return out;
}

bool ScanRequest(std::string_view text, const doc::Limits& limits, Request* r) {
  if (text.size() > limits.max_document_bytes || limits.max_depth < 1) return false;
  Scanner s(text, limits.max_depth);
  Members m;
  if (!s.Take('{')) return false;
  if (!s.Take('}')) {
    do {
      std::string_view name;
      bool escaped = false;
      if (!s.String(&name, &escaped) || escaped || !s.Take(':')) return false;
      s.SkipWhitespace();
      const char* start = s.pos();
      bool value_escaped = false;
      if (s.Peek() == '"') {
        std::string_view contents;
        if (!s.String(&contents, &value_escaped)) return false;
      } else if (!s.Value(1)) {
        return false;
      }
      const Member which = MemberOf(name);
      if (which == kOther) continue;
      if (m.Has(which)) return false;  // duplicates: leave to the full parser
      m.present |= 1u << which;
      if (value_escaped) m.escaped |= 1u << which;
      m.text[which] = std::string_view(start, static_cast<size_t>(s.pos() - start));
    } while (s.Take(','));
    if (!s.Take('}')) return false;
  }
  if (!s.AtEnd()) return false;

  std::string_view op;
  return Id(m, &r->id) && PlainString(m, kOp, &op) && FastOp(op, &r->op) && Fields(m, limits, r);
}

}  // namespace skiff::server::internal
