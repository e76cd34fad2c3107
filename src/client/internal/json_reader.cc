#include "client/internal/json_reader.h"

#include "client/internal/byte_scan.h"
#include "doc/json_number.h"
#include "doc/json_skip.h"

namespace skiff::client::internal {
namespace {

constexpr int kMaxLevels = 64;

// The client's SSE2 scan for the bytes that end a run of plain string bytes.
constexpr doc::JsonStringStopFn kFindStop = ScanToStop<Stops::kQuoteBackslashControl>;

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

bool JsonReader::String(std::string* out) {
  if (!Take('"')) return false;
  out->clear();
  return StringBody(out);
}

bool JsonReader::String(std::string_view* out) {
  if (!Take('"')) return false;
  const char* start = p_;
  p_ = kFindStop(p_, end_);
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
    p_ = kFindStop(p_, end_);
    out->append(run, p_);
    if (p_ == end_ || static_cast<unsigned char>(*p_) < 0x20) return false;
    if (*p_++ == '"') return true;
    uint32_t cp;
    const char* next = doc::ReadJsonEscape(p_, end_, &cp);
    if (next == nullptr) return false;
    p_ = next;
    AppendUtf8(cp, out);
  }
}

bool JsonReader::Unsigned(uint64_t* out) {
  SkipWhitespace();
  const doc::NumberScan scan = doc::ScanNumber(p_, end_);
  // A plain integer: a sign, fraction or exponent makes it something else,
  // and a digit after the scan's end is one after a leading zero ("01").
  if (scan.end == nullptr || scan.negative || scan.fraction || scan.exponent) return false;
  if (scan.end < end_ && doc::IsJsonDigit(*scan.end)) return false;
  uint64_t v = 0;
  for (const char* p = p_; p < scan.end; ++p) {
    const uint64_t d = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  p_ = scan.end;
  *out = v;
  return true;
}

bool JsonReader::Null() {
  SkipWhitespace();
  const char* next = doc::SkipJsonLiteral(p_, end_, "null");
  if (next == nullptr) return false;
  p_ = next;
  return true;
}

bool JsonReader::Skip(std::string_view* span) {
  SkipWhitespace();
  const char* next = doc::SkipJsonValue<kFindStop>(p_, end_);
  if (next == nullptr) return false;
  if (span != nullptr) *span = std::string_view(p_, static_cast<size_t>(next - p_));
  p_ = next;
  return true;
}

}  // namespace skiff::client::internal
