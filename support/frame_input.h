// FrameInput: what one client connection of the suite has received: its
// bytes, read straight into a buffer of its own, and the frame reader that
// cuts them into server messages (src/ws, client role), so the load driver
// and the connection fleet read frames the way the server writes them.
//
// Not thread-safe: one per connection, used by the thread that reads it.
#ifndef SKIFF_SUPPORT_FRAME_INPUT_H_
#define SKIFF_SUPPORT_FRAME_INPUT_H_

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "ws/frame.h"

namespace skiff::bench {

class FrameInput {
 public:
  struct Span {
    char* data;
    size_t size;
  };

  explicit FrameInput(size_t max_message_bytes = 64u << 20)
      : reader_(ws::Role::kClient, max_message_bytes) {}

  // Free space to read into: at least 16 KiB, and room for the whole of a
  // large frame once its header has arrived. Commit(n) after n bytes.
  Span Space() {
    const size_t want = std::max(used_ + kMinSpace, needed_);
    if (buffer_.size() < want) buffer_.resize(std::max(want, buffer_.size() * 2));
    return {buffer_.data() + used_, buffer_.size() - used_};
  }
  void Commit(size_t n) { used_ += n; }
  void Append(std::string_view bytes) {
    Span s = Space();
    if (s.size < bytes.size()) {
      buffer_.resize(used_ + bytes.size());
      s = {buffer_.data() + used_, bytes.size()};
    }
    std::memcpy(s.data, bytes.data(), bytes.size());
    Commit(bytes.size());
  }

  // Calls on_message(const ws::Message&) for every whole message received
  // (a false return stops); false when the server broke RFC 6455, with the
  // reason in error().
  template <typename OnMessage>
  bool Drain(OnMessage&& on_message) {
    const ws::FrameReader::Step step =
        reader_.Read(buffer_.data(), used_, std::forward<OnMessage>(on_message));
    if (reader_.failed()) return false;
    std::memmove(buffer_.data(), buffer_.data() + step.consumed, used_ - step.consumed);
    used_ -= step.consumed;
    needed_ = step.frame_bytes;
    if (used_ == 0 && buffer_.size() > kKeptBytes) std::string().swap(buffer_);
    return true;
  }

  // The same for `n` bytes read into a buffer of the caller's (`data` is
  // unmasked and cut in place): only what a frame left unfinished is kept,
  // so thousands of idle connections hold no buffer each.
  template <typename OnMessage>
  bool Feed(char* data, size_t n, OnMessage&& on_message) {
    if (used_ > 0) {
      Append(std::string_view(data, n));
      return Drain(std::forward<OnMessage>(on_message));
    }
    const ws::FrameReader::Step step = reader_.Read(data, n, std::forward<OnMessage>(on_message));
    if (reader_.failed()) return false;
    needed_ = step.frame_bytes;
    if (step.consumed < n) Append(std::string_view(data + step.consumed, n - step.consumed));
    return true;
  }

  // Frees the buffer and forgets a message under way.
  void Clear() {
    std::string().swap(buffer_);
    used_ = needed_ = 0;
    reader_.Clear();
  }

  const std::string& error() const { return reader_.error_reason(); }

 private:
  static constexpr size_t kMinSpace = 16 * 1024;
  // An emptied buffer larger than this is freed.
  static constexpr size_t kKeptBytes = 256 * 1024;
  std::string buffer_;
  size_t used_ = 0;    // bytes of buffer_ received, not yet consumed
  size_t needed_ = 0;  // the whole size of a large frame under way
  ws::FrameReader reader_;
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_FRAME_INPUT_H_
