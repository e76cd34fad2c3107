// JsonReader: a forward-only reader over JSON text (RFC 8259) that builds no
// tree. It reads strings, unsigned integers and literals in place, and skips
// a whole value while checking its grammar (by doc/json_skip.h, the rules
// the cluster relay reads values by too), returning the span it covered,
// so a large reply (a bootstrap page of thousands of rows) can be taken
// apart member by member and its nested values kept as the text they are.
//
// Every method returns false on text that is not JSON of the expected shape;
// the caller turns that into an error and reads no further (where the reader
// then stands is unspecified: Skip leaves it at the value). UTF-8 is not
// validated here: the WebSocket layer checks every text frame before it
// reaches a reader. Thread-compatible.
#ifndef SKIFF_CLIENT_INTERNAL_JSON_READER_H_
#define SKIFF_CLIENT_INTERNAL_JSON_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "doc/json_skip.h"

namespace skiff::client::internal {

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  // Takes `c` (after whitespace) if it comes next. Inline: it runs between
  // every two tokens.
  bool Take(char c) {
    SkipWhitespace();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  // True when only whitespace is left.
  bool AtEnd();

  // A string, unescaped into `out`.
  bool String(std::string* out);
  // A string as a view: into the text when it has no escape (most strings),
  // else into the reader's own unescaped copy, valid until the next call.
  bool String(std::string_view* out);
  // A non-negative integer that fits 64 bits.
  bool Unsigned(uint64_t* out);
  // `null`, if it comes next (nothing is consumed otherwise).
  bool Null();
  // Any value, checked and skipped; `span` gets its text.
  bool Skip(std::string_view* span = nullptr);

  // The members of an object: Begin takes '{'; Next reads the next member's
  // name and its ':' into `name` and returns true, or takes the closing '}'
  // and sets `*done`. False on malformed text.
  bool BeginObject() { return Open('{'); }
  // The name is a view, as String(std::string_view*) gives it.
  bool NextMember(std::string_view* name, bool* done);
  // The same for arrays: NextElement returns true with `*done` false when a
  // value follows (the caller reads it), or takes ']' and sets `*done`.
  bool BeginArray() { return Open('['); }
  bool NextElement(bool* done);

 private:
  bool Open(char c);
  // Before an element or member: takes the closing `close` (done) or, past
  // the first element, the ',' that must come first.
  bool Step(char close, bool* done);
  void SkipWhitespace() { p_ = doc::SkipJsonSpace(p_, end_); }
  // After the opening quote: the rest of a string, unescaped into `out`.
  bool StringBody(std::string* out);

  const char* p_;
  const char* end_;
  std::string unescaped_;  // what String(std::string_view*) views when it had to unescape
  // Whether the object or array being walked has had a member yet, for the
  // comma rule; one bit per nesting level (64 levels at most).
  uint64_t first_ = 0;
  int level_ = -1;
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_JSON_READER_H_
