// The replies of the sync ops (docs/sync.md): push, pull, bootstrap and
// wait. Stored values are JSON text already and are copied as they are.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_SYNC_REPLIES_H_
#define SKIFF_SERVER_INTERNAL_WIRE_SYNC_REPLIES_H_

#include <cstdint>
#include <string>

#include "sync/types.h"

namespace skiff::server::internal {

std::string EncodePushReply(uint64_t id, const sync::PushReply& reply);
std::string EncodePullReply(uint64_t id, const sync::PullReply& reply);
// The cursor and the next page's `after` come before the rows, so that a
// client can ask for the next page before it reads this one's rows.
std::string EncodeBootstrapReply(uint64_t id, const sync::BootstrapReply& reply);
std::string EncodeWaitReply(uint64_t id, const sync::WaitReply& reply);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_SYNC_REPLIES_H_
