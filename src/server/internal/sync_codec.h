// The wire form of the sync ops (push, pull, bootstrap, wait): decoding their
// request fields into a Request and encoding their replies. Field checks of
// docs/protocol.md ("Sync") happen here; the sync engine checks the rest
// (groups, sequence order, limits). Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_SYNC_CODEC_H_
#define SKIFF_SERVER_INTERNAL_SYNC_CODEC_H_

#include <cstdint>
#include <string>

#include "base/status.h"
#include "doc/document.h"
#include "server/internal/protocol.h"
#include "sync/types.h"

namespace skiff::server::internal {

// Default page size of pull and bootstrap when the request names none.
inline constexpr size_t kDefaultSyncPage = 1000;
// Default hold of a wait without timeout_ms.
inline constexpr uint64_t kDefaultWaitMs = 30000;

// Fills the sync fields of `r` (whose op is a sync op) from `obj`.
// bad_request naming the field when one is missing or of the wrong type.
Status DecodeSyncFields(doc::Value& obj, Request& r);

std::string EncodePushReply(uint64_t id, const sync::PushReply& reply);
std::string EncodePullReply(uint64_t id, const sync::PullReply& reply);
std::string EncodeBootstrapReply(uint64_t id, const sync::BootstrapReply& reply);
std::string EncodeWaitReply(uint64_t id, const sync::WaitReply& reply);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_SYNC_CODEC_H_
