// SameValue: JSON equality that also compares number types. nlohmann's ==
// holds for 1u == 1 and 1 == 1.0, but the server treats them differently
// (AddAtPath sums integers and doubles differently), so the request decoders
// must agree on the type too.
#ifndef SKIFF_TEST_SERVER_SAME_VALUE_H_
#define SKIFF_TEST_SERVER_SAME_VALUE_H_

#include <cstddef>

#include "doc/document.h"

namespace skiff::test {

inline bool SameValue(const doc::Value& a, const doc::Value& b) {
  if (a.type() != b.type() || a != b) return false;
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameValue(a[i], b[i])) return false;
    }
  } else if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !SameValue(*it, *other)) return false;
    }
  }
  return true;
}

}  // namespace skiff::test

#endif  // SKIFF_TEST_SERVER_SAME_VALUE_H_
