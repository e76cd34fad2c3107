#include "doc/document.h"

#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace skiff::doc {
namespace {

// Error messages may reach the wire; nlohmann quotes the offending input in its
// message, which can be invalid UTF-8. Keep printable ASCII only.
std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7F ? c : '?');
  }
  return out;
}

// nlohmann's message starts with "[json.exception.parse_error.101] parse error
// at line 1, column 7: "; the part after it says what was wrong.
std::string ParseErrorReason(const char* what) {
  std::string_view message(what);
  const size_t at = message.find("parse error");
  if (at != std::string_view::npos) {
    const size_t colon = message.find(": ", at);
    if (colon != std::string_view::npos) message.remove_prefix(colon + 2);
  }
  return Printable(message);
}

// Deepest nesting of [ and { outside strings, stopping as soon as it passes
// `max_depth`. Runs before the tree is built so that a hostile input such as a
// million '[' is refused in one linear pass without allocating anything. The
// scan does not validate; malformed text is left to the real parser.
bool NestingExceeds(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return true;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return false;
}

}  // namespace

Result<Value> Parse(std::string_view text, const Limits& limits) {
  if (text.size() > limits.max_document_bytes) {
    return TooLarge("document is " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(limits.max_document_bytes));
  }
  if (NestingExceeds(text, limits.max_depth)) {
    return TooLarge("document nests deeper than " + std::to_string(limits.max_depth) + " levels");
  }
  try {
    // nlohmann's parser keeps its own explicit stack, and the depth is already
    // bounded, so parsing cannot exhaust the call stack.
    return Value::parse(text.begin(), text.end());
  } catch (const Value::parse_error& e) {
    // e.byte counts the bytes read, the offending one included; the message
    // gives its zero-based offset (the length of the text when it ended early).
    const size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    return BadRequest("malformed JSON at byte " + std::to_string(offset) + ": " +
                      ParseErrorReason(e.what()));
  } catch (const std::bad_alloc&) {
    return TooLarge("document does not fit in memory");
  } catch (const std::exception& e) {
    // out_of_range for a number too large for a double ("1e400"); drop the
    // "[json.exception.out_of_range.406] " prefix.
    std::string_view what(e.what());
    if (const size_t end = what.find("] "); !what.empty() && what[0] == '[' && end != what.npos) {
      what.remove_prefix(end + 2);
    }
    return BadRequest("invalid JSON: " + Printable(what));
  }
}

std::string Dump(const Value& value) {
  try {
    return value.dump(-1, ' ', false, Value::error_handler_t::replace);
  } catch (...) {
    // With the replace handler dump only throws on allocation failure, which
    // the rest of the process would not survive either.
    SKIFF_CHECK(false);
  }
  return {};
}

Status CheckDepth(const Value& value, size_t max_depth) {
  // Depth-first with an explicit stack: a value built in code (not parsed) can
  // be arbitrarily deep, and recursion would let it overflow the call stack.
  struct Frame {
    const Value* node;
    size_t depth;  // containers from the root down to and including `node`
  };
  std::vector<Frame> stack;
  if (value.is_structured()) stack.push_back({&value, 1});
  while (!stack.empty()) {
    const Frame frame = stack.back();
    stack.pop_back();
    if (frame.depth > max_depth) {
      return TooLarge("document nests deeper than " + std::to_string(max_depth) + " levels");
    }
    for (const Value& child : *frame.node) {
      if (child.is_structured()) stack.push_back({&child, frame.depth + 1});
    }
  }
  return Status::Ok();
}

}  // namespace skiff::doc
