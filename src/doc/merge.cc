#include "doc/merge.h"

#include <exception>
#include <string>
#include <utility>

namespace skiff::doc {
namespace {

using Object = Value::object_t;

// A patch adding or removing at most this many members changes them one at a
// time (each a move of the members after it); more than this rebuilds the
// object in one pass, so a large patch on a large object stays linear.
constexpr size_t kMembersChangedInPlace = 8;

void Apply(Value& target, const Value& patch);

// RFC 7386 for one object: `changes` and `members` are both in key order, so a
// single merging walk visits each once.
void MergeObject(Object& members, const Object& changes) {
  size_t added = 0;
  size_t removed = 0;
  for (const auto& [key, change] : changes) {
    const bool present = members.find(key) != members.end();
    if (change.is_null()) {
      removed += present ? 1 : 0;
    } else {
      added += present ? 0 : 1;
    }
  }
  if (added + removed <= kMembersChangedInPlace) {
    for (const auto& [key, change] : changes) {
      if (change.is_null()) {
        members.erase(key);
      } else {
        Apply(members[key], change);
      }
    }
    return;
  }
  // Room for every member either side may keep, so that putting the members
  // back after a failed allocation (below) cannot itself allocate.
  Object::Members merged;
  merged.reserve(members.size() + added);
  auto have = members.begin();
  try {
    for (const auto& [key, change] : changes) {
      for (; have != members.end() && have->first < key; ++have) {
        merged.push_back(std::move(*have));
      }
      const bool present = have != members.end() && have->first == key;
      if (change.is_null()) {
        if (present) ++have;
        continue;
      }
      if (present) {
        Apply(have->second, change);
        merged.push_back(std::move(*have));
        ++have;
      } else {
        Value fresh;
        Apply(fresh, change);
        merged.emplace_back(key, std::move(fresh));
      }
    }
  } catch (...) {
    // Members not reached yet are still in place: move them over too, so the
    // object stays whole and sorted (patched up to here) for the caller.
    for (; have != members.end(); ++have) merged.push_back(std::move(*have));
    members = Object::FromMembers(std::move(merged));
    throw;
  }
  for (; have != members.end(); ++have) merged.push_back(std::move(*have));
  if (removed > 0) merged.shrink_to_fit();
  members = Object::FromMembers(std::move(merged));
}

void Apply(Value& target, const Value& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = Value::object();
  MergeObject(target.get_ref<Object&>(), patch.get_ref<const Object&>());
}

}  // namespace

Status MergePatch(Value& doc, const Value& patch, size_t max_depth) {
  // Every container of the patch lands in the result at the level it has in
  // the patch (objects as merged objects, everything else verbatim; a null
  // member is a leaf and only deletes), and the parts of `doc` the patch does
  // not reach keep their depth. So the result stays within `max_depth` exactly
  // when the patch does, given a `doc` that already did. Checking before
  // applying keeps `doc` unchanged on error and bounds the recursion of Apply,
  // which follows the patch.
  if (!CheckDepth(patch, max_depth).ok()) {
    return TooLarge("the patched document would nest deeper than " + std::to_string(max_depth) +
                    " levels");
  }
  try {
    Apply(doc, patch);  // RFC 7386, section 2
  } catch (const std::exception& e) {
    // Only allocation can fail here; `doc` may then be partly patched, but the
    // process is in no state to go on either.
    return Internal(std::string("merge patch failed: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace skiff::doc
