#include "doc/path.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace skiff::doc {
namespace {

std::string Where(const Path& path, size_t length) {
  if (length == 0) return "the document root";
  return "path '" + PathToString(Path(path.begin(), path.begin() + length)) + "'";
}

// The stored number as int64 when it is an integer that fits; integers parsed
// from text above INT64_MAX are number_unsigned and do not.
bool AsInt64(const Value& number, int64_t* out) {
  if (number.is_number_integer() && !number.is_number_unsigned()) {
    *out = number.get<int64_t>();
    return true;
  }
  if (number.is_number_unsigned()) {
    const uint64_t u = number.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  return false;
}

// current + delta, both numbers. Integer arithmetic is exact so counters never
// drift; an operand with a fraction makes the result a double.
Result<Value> Sum(const Value& current, const Value& delta, const Path& path) {
  if (!current.is_number_float() && delta.is_number_float()) {
    // A delta without a fraction is an integer, however it was written:
    // JSON has one kind of number, and the parser hands integers past 64
    // bits (2^64 and up) over as doubles. Turning the stored integer into a
    // double would silently lose exactness. Past 2^53 a double no longer
    // says which integer was written (2^63 + 1 reads as 2^63), so such a
    // delta is too_large, as an integer overflow is.
    const double d = delta.get<double>();
    if (std::trunc(d) == d) {
      constexpr double kTwo53 = 9007199254740992.0;
      if (d < -kTwo53 || d > kTwo53) {
        return TooLarge("add at " + Where(path, path.size()) +
                        " leaves the 64-bit signed integer range");
      }
      return Sum(current, Value(static_cast<int64_t>(d)), path);
    }
  }
  if (!current.is_number_float() && !delta.is_number_float()) {
    int64_t a = 0;
    int64_t b = 0;
    int64_t sum = 0;
    if (!AsInt64(current, &a) || !AsInt64(delta, &b) || __builtin_add_overflow(a, b, &sum)) {
      return TooLarge("add at " + Where(path, path.size()) +
                      " leaves the 64-bit signed integer range");
    }
    return Value(sum);
  }
  const double sum = current.get<double>() + delta.get<double>();
  if (!std::isfinite(sum)) {
    return TooLarge("add at " + Where(path, path.size()) + " is not a finite number");
  }
  return Value(sum);
}

}  // namespace

Result<Value> AddAtPath(Value& doc, const Path& path, const Value& delta) {
  if (!delta.is_number()) {
    return BadRequest(std::string("delta must be a number, not ") + delta.type_name());
  }
  if (delta.is_number_float() && !std::isfinite(delta.get<double>())) {
    return BadRequest("delta must be a finite number");
  }

  // First pass, read only: find what exists and compute the new number, so
  // every error is found before anything is written and `doc` stays as it was.
  // A null member counts as missing, as it does in a merge patch.
  const Value* node = &doc;
  size_t existing = 0;  // leading path members that exist and are objects
  for (; existing < path.size(); ++existing) {
    if (node->is_null()) break;
    if (!node->is_object()) {
      return TypeMismatch("add at " + Where(path, path.size()) + ": " + Where(path, existing) +
                          " is " + node->type_name() + ", not an object");
    }
    const auto it = node->find(path[existing]);
    if (it == node->end()) {
      node = nullptr;
      break;
    }
    node = &*it;
  }
  const bool target_exists = existing == path.size() && node != nullptr && !node->is_null();
  if (target_exists && !node->is_number()) {
    return TypeMismatch("add at " + Where(path, path.size()) + ": the value is " +
                        node->type_name() + ", not a number");
  }
  Result<Value> sum = Sum(target_exists ? *node : Value(0), delta, path);
  if (!sum.ok()) return sum;

  // Second pass: operator[] turns null into an object and creates missing
  // members; nothing on the way can fail now.
  Value* slot = &doc;
  for (const std::string& key : path) slot = &(*slot)[key];
  *slot = *sum;
  return sum;
}

std::string PathToString(const Path& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (i > 0) out.push_back('.');
    out += path[i];
  }
  return out;
}

}  // namespace skiff::doc
