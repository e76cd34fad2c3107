// Fuzz target for the two in-place writes, doc::MergePatch and doc::AddAtPath.
// The server applies them to the cached document itself, so besides never
// crashing they must leave the document exactly as it was when they fail, and
// keep it within the depth limit when they succeed.
//
// Input: lines separated by '\n': the document, the merge patch, the add's
// delta (each JSON text), then one path key per remaining line. A document
// that does not parse stands for a missing one (null), as in the server.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/status.h"
#include "doc/document.h"
#include "doc/merge.h"
#include "doc/path.h"

namespace {

using skiff::StatusCode;
using skiff::doc::Value;

// Small, so short inputs reach the depth errors. The protocol refuses paths of
// max_depth keys or more, so the target does too.
constexpr size_t kMaxDepth = 5;

// Dumped text tells 1 from 1.0, which == does not.
bool Same(const Value& a, const Value& b) { return skiff::doc::Dump(a) == skiff::doc::Dump(b); }

// RFC 7386 section 2 transcribed, to check MergePatch against.
Value ReferenceMerge(const Value& target, const Value& patch) {
  if (!patch.is_object()) return patch;
  Value result = target.is_object() ? target : Value::object();
  for (const auto& [name, value] : patch.items()) {
    if (value.is_null()) {
      result.erase(name);
    } else {
      const auto it = result.find(name);
      result[name] = ReferenceMerge(it == result.end() ? Value() : *it, value);
    }
  }
  return result;
}

void CheckMerge(const Value& doc, const Value& patch) {
  Value merged = doc;
  const skiff::Status status = skiff::doc::MergePatch(merged, patch, kMaxDepth);
  if (!status.ok()) {
    SKIFF_CHECK(status.code() == StatusCode::kTooLarge);
    SKIFF_CHECK(Same(merged, doc));
    return;
  }
  SKIFF_CHECK(skiff::doc::CheckDepth(merged, kMaxDepth).ok());
  SKIFF_CHECK(Same(merged, ReferenceMerge(doc, patch)));
  // A merge patch is idempotent: a retried request changes nothing more.
  Value twice = merged;
  SKIFF_CHECK(skiff::doc::MergePatch(twice, patch, kMaxDepth).ok());
  SKIFF_CHECK(Same(twice, merged));
}

void CheckAdd(const Value& doc, const skiff::doc::Path& path, const Value& delta) {
  Value after = doc;
  skiff::Result<Value> sum = skiff::doc::AddAtPath(after, path, delta);
  if (!sum.ok()) {
    const StatusCode code = sum.status().code();
    SKIFF_CHECK(code == StatusCode::kTypeMismatch || code == StatusCode::kBadRequest ||
                code == StatusCode::kTooLarge);
    SKIFF_CHECK(Same(after, doc));
    return;
  }
  SKIFF_CHECK(sum->is_number());
  SKIFF_CHECK(skiff::doc::CheckDepth(after, kMaxDepth).ok());

  // The old number, found the way the contract describes: missing members and
  // null count as 0.
  Value old = 0;
  const Value* node = &doc;
  for (const std::string& key : path) {
    if (node == nullptr || !node->is_object()) {
      node = nullptr;
      break;
    }
    const auto it = node->find(key);
    node = it == node->end() ? nullptr : &*it;
  }
  if (node != nullptr && !node->is_null()) old = *node;
  SKIFF_CHECK(old.is_number());

  // Integers stay integers and are exact; a delta without a fraction is an
  // integer however it was written (protocol.md, add); a stored or delta
  // number with a fraction makes a floating-point sum.
  Value step = delta;
  if (!old.is_number_float() && step.is_number_float() &&
      std::trunc(step.get<double>()) == step.get<double>()) {
    step = Value(static_cast<int64_t>(step.get<double>()));
  }
  if (old.is_number_float() || step.is_number_float()) {
    SKIFF_CHECK(sum->is_number_float());
    SKIFF_CHECK(sum->get<double>() == old.get<double>() + step.get<double>());
  } else {
    SKIFF_CHECK(sum->is_number_integer());
    int64_t expected = 0;
    SKIFF_CHECK(!__builtin_add_overflow(old.get<int64_t>(), step.get<int64_t>(), &expected));
    SKIFF_CHECK(sum->get<int64_t>() == expected);
  }

  // Everything off the path is untouched: the expected document is the old
  // one with the sum written at the path.
  Value expected_doc = doc.is_null() ? Value::object() : doc;
  Value* slot = &expected_doc;
  for (const std::string& key : path) {
    if (slot->is_null()) *slot = Value::object();
    slot = &(*slot)[key];
  }
  *slot = *sum;
  SKIFF_CHECK(Same(after, expected_doc));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string_view> lines;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (true) {
    const size_t end = rest.find('\n');
    lines.push_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  const skiff::doc::Limits limits{.max_depth = kMaxDepth};
  auto parse = [&](size_t i) {
    if (i >= lines.size()) return Value();
    skiff::Result<Value> value = skiff::doc::Parse(lines[i], limits);
    return value.ok() ? std::move(*value) : Value();
  };
  const Value doc = parse(0);
  const Value patch = parse(1);
  const Value delta = lines.size() > 2 ? parse(2) : Value(1);
  skiff::doc::Path path;
  for (size_t i = 3; i < lines.size() && path.size() + 1 < kMaxDepth; ++i) {
    path.emplace_back(lines[i]);
  }

  CheckMerge(doc, patch);
  CheckAdd(doc, path, delta);
  // Adding to the merged document reaches states the seeds alone do not.
  Value merged = doc;
  if (skiff::doc::MergePatch(merged, patch, kMaxDepth).ok()) CheckAdd(merged, path, delta);
  return 0;
}
