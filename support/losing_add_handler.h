// LosingAddHandler: a wrapper around the server's request handler that
// acknowledges one `add` in n without passing it on, so that update is
// lost, the way leveldb's ErrorEnv wraps an Env to fail its writes. The
// end-to-end suite's verdict must catch it (test/e2e/verdict_test.cc); the
// server itself carries no such branch. Every other frame, and the adds it
// keeps, go to the wrapped handler unchanged.
//
// Installed through Server::Start's handler wrap (the Stack does it for
// --test-drop-one-add-in). Thread-safe like the handler it wraps.
#ifndef SKIFF_SUPPORT_LOSING_ADD_HANDLER_H_
#define SKIFF_SUPPORT_LOSING_ADD_HANDLER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "server/internal/listener.h"

namespace skiff::bench {

class LosingAddHandler final : public server::internal::ListenerHandler {
 public:
  // Loses the n-th, 2n-th, ... add a session may write (n >= 1).
  LosingAddHandler(server::internal::ListenerHandler& target, uint32_t n)
      : target_(target), n_(n) {}

  void OnText(const std::shared_ptr<server::internal::Connection>& conn,
              std::string_view payload) override;
  void OnBinary(const std::shared_ptr<server::internal::Connection>& conn) override {
    target_.OnBinary(conn);
  }
  void OnClose(const std::shared_ptr<server::internal::Connection>& conn) override {
    target_.OnClose(conn);
  }

 private:
  server::internal::ListenerHandler& target_;
  const uint32_t n_;
  std::atomic<uint64_t> adds_{0};
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_LOSING_ADD_HANDLER_H_
