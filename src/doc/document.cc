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

// Builds the tree from nlohmann's SAX events. Finished values wait on one
// stack, and object keys on another, until their container closes; then the
// container is made at its exact size in one allocation and, for an object,
// sorted once (FlatObject::FromMembers). nlohmann's own DOM builder inserts
// each member as it reads it, which costs a move of the members after it
// whenever the keys are out of order: quadratic on a large hostile object.
class TreeBuilder {
 public:
  using number_integer_t = Value::number_integer_t;
  using number_unsigned_t = Value::number_unsigned_t;
  using number_float_t = Value::number_float_t;
  using string_t = Value::string_t;
  using binary_t = Value::binary_t;

  bool null() { return Push(Value()); }
  bool boolean(bool b) { return Push(Value(b)); }
  bool number_integer(number_integer_t n) { return Push(Value(n)); }
  bool number_unsigned(number_unsigned_t n) { return Push(Value(n)); }
  bool number_float(number_float_t n, const string_t&) { return Push(Value(n)); }
  bool string(string_t& s) { return Push(Value(std::move(s))); }
  bool binary(binary_t& b) { return Push(Value::binary(std::move(b))); }
  bool key(string_t& k) {
    keys_.push_back(std::move(k));
    return true;
  }
  bool start_object(std::size_t) {
    open_.push_back({values_.size(), keys_.size()});
    return true;
  }
  bool end_object() {
    const Open o = open_.back();
    open_.pop_back();
    Value::object_t::Members members;
    members.reserve(values_.size() - o.first_value);
    for (size_t i = o.first_value, k = o.first_key; i < values_.size(); ++i, ++k) {
      members.emplace_back(std::move(keys_[k]), std::move(values_[i]));
    }
    values_.resize(o.first_value);
    keys_.resize(o.first_key);
    Value object(Value::value_t::object);
    object.get_ref<Value::object_t&>() = Value::object_t::FromMembers(std::move(members));
    return Push(std::move(object));
  }
  bool start_array(std::size_t) {
    open_.push_back({values_.size(), keys_.size()});
    return true;
  }
  bool end_array() {
    const size_t first = open_.back().first_value;
    open_.pop_back();
    Value array(Value::value_t::array);
    auto& items = array.get_ref<Value::array_t&>();
    items.reserve(values_.size() - first);
    for (size_t i = first; i < values_.size(); ++i) items.push_back(std::move(values_[i]));
    values_.resize(first);
    return Push(std::move(array));
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    error_id_ = e.id;
    error_position_ = position;
    return false;
  }

  // After a parse that returned true.
  Value TakeRoot() { return std::move(values_.back()); }
  // After a parse that returned false: nlohmann's id (1xx for a parse error),
  // the bytes it read, the offending one included, and its message.
  int error_id() const { return error_id_; }
  size_t error_position() const { return error_position_; }
  const std::string& error() const { return error_; }

 private:
  struct Open {
    size_t first_value;  // this container's first item on values_
    size_t first_key;    // its first key on keys_ (objects)
  };

  bool Push(Value v) {
    values_.push_back(std::move(v));
    return true;
  }

  std::vector<Value> values_;
  std::vector<string_t> keys_;
  std::vector<Open> open_;
  std::string error_;
  int error_id_ = 0;
  size_t error_position_ = 0;
};

// nlohmann's exceptions start with "[json.exception.out_of_range.406] "; the
// rest says what was wrong.
std::string WithoutExceptionPrefix(std::string_view what) {
  if (const size_t end = what.find("] "); !what.empty() && what[0] == '[' && end != what.npos) {
    what.remove_prefix(end + 2);
  }
  return Printable(what);
}

}  // namespace

Result<Value> Parse(std::string_view text, const Limits& limits) {
  if (text.size() > limits.max_document_bytes) {
    return TooLarge("document is " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(limits.max_document_bytes));
  }
  // Text cannot nest deeper than it has bytes, so a limit at least that
  // large needs no scan.
  if (limits.max_depth < text.size() && NestingExceeds(text, limits.max_depth)) {
    return TooLarge("document nests deeper than " + std::to_string(limits.max_depth) + " levels");
  }
  TreeBuilder builder;
  try {
    // nlohmann's parser keeps its own explicit stack, and the depth is already
    // bounded, so parsing cannot exhaust the call stack.
    if (Value::sax_parse(text.begin(), text.end(), &builder)) return builder.TakeRoot();
  } catch (const std::bad_alloc&) {
    return TooLarge("document does not fit in memory");
  } catch (const std::exception& e) {
    // Not expected: the parser reports its own errors through the builder.
    return BadRequest("invalid JSON: " + WithoutExceptionPrefix(e.what()));
  }
  if (builder.error_id() >= 100 && builder.error_id() < 200) {  // a parse_error
    // The position counts the bytes read, the offending one included; the
    // message gives its zero-based offset (the length of the text when it
    // ended early).
    const size_t offset = builder.error_position() > 0 ? builder.error_position() - 1 : 0;
    return BadRequest("malformed JSON at byte " + std::to_string(offset) + ": " +
                      ParseErrorReason(builder.error().c_str()));
  }
  // out_of_range for a number too large for a double ("1e400").
  return BadRequest("invalid JSON: " + WithoutExceptionPrefix(builder.error()));
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
