#include "support/losing_add_handler.h"

#include <optional>
#include <string>

#include "server/internal/wire/replies.h"
#include "server/internal/wire/request_decoder.h"

namespace skiff::bench {

void LosingAddHandler::OnText(const std::shared_ptr<server::internal::Connection>& conn,
                              std::string_view payload) {
  server::internal::Request r;
  std::optional<uint64_t> id;
  // Only an add the handler would run (well-formed, by a session that may
  // write its table) counts; anything else is the handler's to answer.
  const bool add = server::internal::DecodeFrame(payload, doc::Limits{}, &r, &id).ok() &&
                   r.op == server::internal::Op::kAdd && conn->user &&
                   conn->permissions.CanWrite(r.table);
  if (!add || adds_.fetch_add(1, std::memory_order_relaxed) % n_ != n_ - 1) {
    target_.OnText(conn, payload);
    return;
  }
  // Acknowledged with the delta as the sum, and not applied.
  std::string reply;
  server::internal::AppendAddReply(reply, r.id, &r.value);
  conn->Send(std::move(reply));
}

}  // namespace skiff::bench
