// ReadBootstrapPage: takes a bootstrap reply's JSON text apart without
// building a tree. A page of 10,000 rows is one frame of megabytes; parsing
// it into a document tree and printing each row's value back to text cost
// most of a device's bootstrap, so the rows' values are kept as the text the
// server sent (the server stores and sends each value in the compact form
// it was pushed in). Thread-safe (no state).
#ifndef SKIFF_CLIENT_INTERNAL_BOOTSTRAP_PAGE_H_
#define SKIFF_CLIENT_INTERNAL_BOOTSTRAP_PAGE_H_

#include <string_view>

#include "base/status.h"
#include "client/sync_messages.h"

namespace skiff::client::internal {

// The page in `reply` (a whole `{"id":..,"ok":true,"rows":[..],..}` object,
// its members in any order). internal when the text is not such a reply;
// `on_next` may have run by then.
Result<BootstrapPage> ReadBootstrapPage(std::string_view reply, const OnNextPage& on_next = {});

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_BOOTSTRAP_PAGE_H_
