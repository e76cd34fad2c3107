// ReadBootstrapPage: takes a bootstrap reply's JSON text apart without
// building a tree. A page of 10,000 rows is one frame of megabytes; parsing
// it into a document tree and printing each row's value back to text cost
// most of a device's bootstrap, so the rows' values are kept as the text the
// server sent (the server stores and sends each value in the compact form
// it was pushed in). Thread-safe (no state).
#ifndef SKIFF_CLIENT_INTERNAL_BOOTSTRAP_PAGE_H_
#define SKIFF_CLIENT_INTERNAL_BOOTSTRAP_PAGE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "client/device_storage.h"

namespace skiff::client::internal {

struct BootstrapPage {
  std::vector<RowWrite> rows;  // in the server's (group, table, key) order
  uint64_t cursor = 0;
  std::optional<RowName> next;  // nullopt on the last page
};

// The page in `reply` (a whole `{"id":..,"ok":true,"rows":[..],..}` object).
// internal when the text is not such a reply.
Result<BootstrapPage> ReadBootstrapPage(std::string_view reply);

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_BOOTSTRAP_PAGE_H_
