// Paths into a document and the atomic nested `add`.
//
// A path is an array of object keys from the root ({"a":{"b":1}} has path
// ["a","b"] to the 1). Functions are pure on the Value they are given; the
// caller serialises access to one document.
#ifndef SKIFF_DOC_PATH_H_
#define SKIFF_DOC_PATH_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "doc/document.h"

namespace skiff::doc {

using Path = std::vector<std::string>;

// Adds `delta` to the number at `path` in `doc` and returns the new number.
// Missing objects along the path and a missing final member are created (the
// number starts from 0); a null document becomes an object. Integers stay
// integers (int64, overflow is too_large) unless `delta` or the stored number
// is floating-point (written with a fraction or exponent, 1.0 included); then
// the sum is a double. Errors: type_mismatch when something on the way is not an
// object or the target is not a number (the message names the path);
// bad_request when `delta` is not a finite number (it is the request that is
// wrong, not the document); too_large when a floating-point sum is not finite.
// A member holding null counts as missing. On error `doc` is unchanged.
Result<Value> AddAtPath(Value& doc, const Path& path, const Value& delta);

// "a.b.c"-style text for messages.
std::string PathToString(const Path& path);

}  // namespace skiff::doc

#endif  // SKIFF_DOC_PATH_H_
