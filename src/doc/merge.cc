#include "doc/merge.h"

#include <exception>
#include <string>

namespace skiff::doc {

Status MergePatch(Value& doc, const Value& patch, size_t max_depth) {
  // Every container of the patch lands in the result at the level it has in
  // the patch (objects as merged objects, everything else verbatim; a null
  // member is a leaf and only deletes), and the parts of `doc` the patch does
  // not reach keep their depth. So the result stays within `max_depth` exactly
  // when the patch does, given a `doc` that already did. Checking before
  // applying keeps `doc` unchanged on error and bounds the recursion of
  // merge_patch, which follows the patch.
  if (!CheckDepth(patch, max_depth).ok()) {
    return TooLarge("the patched document would nest deeper than " + std::to_string(max_depth) +
                    " levels");
  }
  try {
    doc.merge_patch(patch);  // RFC 7386, section 2, as written
  } catch (const std::exception& e) {
    // Only allocation can fail here; `doc` may then be partly patched, but the
    // process is in no state to go on either.
    return Internal(std::string("merge patch failed: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace skiff::doc
