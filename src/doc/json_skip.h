// SkipJsonValue: where one JSON value (RFC 8259) ends, its grammar checked
// but nothing decoded, as one kernel for every reader that keeps values as
// the text they arrived in: the client's reply reader and the cluster
// relay's member walker. Both hand a value's text on as written, so they
// must agree on where it ends and on what is no value at all; the rules
// (whitespace, strings and their escapes, numbers through json_number.h,
// nesting within kMaxSkipDepth, the three literals) are written once here.
// Malformed text is reported as nullptr, as ScanNumber reports it.
//
// Nothing reads at or past `end`. UTF-8 is not validated: text reaches
// these readers from a WebSocket layer that checks it. The server's strict
// request scanner keeps its own one-pass validator. Thread-safe (no state).
#ifndef SKIFF_DOC_JSON_SKIP_H_
#define SKIFF_DOC_JSON_SKIP_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "doc/json_number.h"

namespace skiff::doc {

// Deeper values are refused rather than risking the stack: a value at
// depth 0 may hold values down to depth kMaxSkipDepth.
inline constexpr int kMaxSkipDepth = 256;

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline const char* SkipJsonSpace(const char* p, const char* end) {
  while (p < end && IsJsonSpace(*p)) ++p;
  return p;
}

// The first byte at or after `p` that ends a run of plain string bytes: a
// quote, a backslash or a control character (0x00..0x1F); `end` if none.
// A reader with a faster scan for the same bytes passes it to the
// templates below instead (the client's SSE2 scan).
inline const char* FindJsonStringStop(const char* p, const char* end) {
  while (p < end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
  return p;
}
using JsonStringStopFn = const char* (*)(const char*, const char*);

// Four hex digits at `p` into `*out`: the end of them, or nullptr.
inline const char* ReadJsonHex4(const char* p, const char* end, uint32_t* out) {
  if (end - p < 4) return nullptr;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = p[i];
    v <<= 4;
    if (IsJsonDigit(c)) {
      v |= static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v |= static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      v |= static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return nullptr;
    }
  }
  *out = v;
  return p + 4;
}

// `p` just past a backslash: the escape's code point into `*cp` (a
// surrogate pair as the one code point it encodes) and the end of the
// escape. nullptr for an unknown escape, short or bad hex digits, a high
// surrogate without its low half, or a low one alone.
inline const char* ReadJsonEscape(const char* p, const char* end, uint32_t* cp) {
  if (p == end) return nullptr;
  switch (*p++) {
    case '"':
      *cp = '"';
      return p;
    case '\\':
      *cp = '\\';
      return p;
    case '/':
      *cp = '/';
      return p;
    case 'b':
      *cp = '\b';
      return p;
    case 'f':
      *cp = '\f';
      return p;
    case 'n':
      *cp = '\n';
      return p;
    case 'r':
      *cp = '\r';
      return p;
    case 't':
      *cp = '\t';
      return p;
    case 'u':
      break;
    default:
      return nullptr;
  }
  p = ReadJsonHex4(p, end, cp);
  if (p == nullptr) return nullptr;
  if (*cp >= 0xD800 && *cp < 0xDC00) {
    uint32_t low;
    if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return nullptr;
    p = ReadJsonHex4(p + 2, end, &low);
    if (p == nullptr || low < 0xDC00 || low >= 0xE000) return nullptr;
    *cp = 0x10000 + ((*cp - 0xD800) << 10) + (low - 0xDC00);
  } else if (*cp >= 0xDC00 && *cp < 0xE000) {
    return nullptr;
  }
  return p;
}

// `p` at a string's opening quote: one past its closing quote, or nullptr
// (no quote at `p`, a raw control character, a bad escape, no end).
template <JsonStringStopFn kFindStop = FindJsonStringStop>
inline const char* SkipJsonString(const char* p, const char* end) {
  if (p == end || *p != '"') return nullptr;
  ++p;
  for (;;) {
    p = kFindStop(p, end);
    if (p == end || static_cast<unsigned char>(*p) < 0x20) return nullptr;
    if (*p++ == '"') return p;
    uint32_t cp;
    p = ReadJsonEscape(p, end, &cp);
    if (p == nullptr) return nullptr;
  }
}

// `word` ("true", "false", "null") at `p`: the end of it, or nullptr.
inline const char* SkipJsonLiteral(const char* p, const char* end, std::string_view word) {
  if (static_cast<size_t>(end - p) < word.size() || std::string_view(p, word.size()) != word) {
    return nullptr;
  }
  return p + word.size();
}

// After any whitespace at `p`, one value nested inside `depth` arrays or
// objects: one past its last byte (whitespace after it is left), or nullptr
// when it is malformed, cut short or nests past kMaxSkipDepth. A number
// ends where its grammar does, so "01" is the value "0" followed by text
// that is the caller's to judge.
template <JsonStringStopFn kFindStop = FindJsonStringStop>
inline const char* SkipJsonValue(const char* p, const char* end, int depth = 0) {
  if (depth > kMaxSkipDepth) return nullptr;
  p = SkipJsonSpace(p, end);
  if (p == end) return nullptr;
  switch (*p) {
    case '"':
      return SkipJsonString<kFindStop>(p, end);
    case 't':
      return SkipJsonLiteral(p, end, "true");
    case 'f':
      return SkipJsonLiteral(p, end, "false");
    case 'n':
      return SkipJsonLiteral(p, end, "null");
    case '{':
    case '[': {
      const char close = *p == '{' ? '}' : ']';
      p = SkipJsonSpace(p + 1, end);
      if (p < end && *p == close) return p + 1;
      for (;;) {
        if (close == '}') {
          p = SkipJsonString<kFindStop>(SkipJsonSpace(p, end), end);
          if (p == nullptr) return nullptr;
          p = SkipJsonSpace(p, end);
          if (p == end || *p != ':') return nullptr;
          ++p;
        }
        p = SkipJsonValue<kFindStop>(p, end, depth + 1);
        if (p == nullptr) return nullptr;
        p = SkipJsonSpace(p, end);
        if (p == end) return nullptr;
        if (*p == close) return p + 1;
        if (*p != ',') return nullptr;
        ++p;
      }
    }
    default:
      return ScanNumber(p, end).end;
  }
}

}  // namespace skiff::doc

#endif  // SKIFF_DOC_JSON_SKIP_H_
