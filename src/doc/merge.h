// RFC 7386 JSON Merge Patch.
#ifndef SKIFF_DOC_MERGE_H_
#define SKIFF_DOC_MERGE_H_

#include "base/status.h"
#include "doc/document.h"

namespace skiff::doc {

// Applies `patch` to `doc` as RFC 7386 says (null members delete, objects merge
// recursively, anything else replaces). too_large when the result would nest
// deeper than `max_depth`; on error `doc` is unchanged.
Status MergePatch(Value& doc, const Value& patch, size_t max_depth = Limits{}.max_depth);

}  // namespace skiff::doc

#endif  // SKIFF_DOC_MERGE_H_
