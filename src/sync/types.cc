#include "sync/types.h"

#include <algorithm>

namespace skiff::sync {

bool Caller::InGroup(const std::string& group) const {
  return groups != nullptr && std::find(groups->begin(), groups->end(), group) != groups->end();
}

}  // namespace skiff::sync
