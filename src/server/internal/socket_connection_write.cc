// SocketConnection's write side: the outgoing queue that replies join
// from any thread, and the flush that writes it to the socket, gathering
// queued chunks into one sendmsg and waiting for writability when the
// socket is full. Its life, handshake and read side are in
// socket_connection.cc.
//
// Threads: Send, SendCopy and the *Locked functions run on any thread,
// under out_mu_, which guards the queue (out_) and its flags. Flush,
// ArmWrite and AfterDrained run on the connection's loop thread only,
// which alone owns the socket and the chunks being written (writing_):
// Flush takes the whole queue under out_mu_ and writes it outside the lock.
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "server/internal/io_loop.h"
#include "server/internal/socket_connection.h"

#include "ws/frame.h"

namespace skiff::server::internal {
namespace {

using asio::ip::tcp;

// Frames up to this size are copied into a shared chunk of the outgoing
// queue; a larger one keeps its own string, so it is never copied.
constexpr size_t kSmallFrameBytes = 16 * 1024;
// A shared chunk takes frames until it holds this much.
constexpr size_t kChunkBytes = 64 * 1024;
// Chunks gathered into one sendmsg.
constexpr size_t kMaxWriteBuffers = 64;

}  // namespace

void SocketConnection::QueueRawLocked(std::string_view bytes) {
  if (out_.empty() || !back_shared_ || out_.back().size() + bytes.size() > kChunkBytes) {
    out_.emplace_back();
    back_shared_ = true;
  }
  out_.back().append(bytes);
  CountQueued(bytes.size());
}

void SocketConnection::QueueLocked(ws::Opcode opcode, std::string_view payload) {
  std::string h;
  ws::AppendHeader(h, opcode, payload.size());
  if (payload.size() > kSmallFrameBytes) {
    QueueRawLocked(h);
    out_.emplace_back(payload);
    back_shared_ = false;
    CountQueued(payload.size());
    return;
  }
  if (out_.empty() || !back_shared_ ||
      out_.back().size() + h.size() + payload.size() > kChunkBytes) {
    out_.emplace_back();
    back_shared_ = true;
  }
  std::string& chunk = out_.back();
  chunk.append(h);
  chunk.append(payload);
  CountQueued(h.size() + payload.size());
}

void SocketConnection::CountQueued(size_t bytes) {
  out_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  shared_.output_bytes.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
}

void SocketConnection::Send(std::string frame) {
  MutexLock lock(&out_mu_);
  if (out_closed_) return;
  if (frame.size() > kSmallFrameBytes) {
    std::string h;
    ws::AppendHeader(h, ws::Opcode::kText, frame.size());
    QueueRawLocked(h);
    const size_t size = frame.size();
    out_.push_back(std::move(frame));
    back_shared_ = false;
    CountQueued(size);
  } else {
    QueueLocked(ws::Opcode::kText, frame);
  }
  RequestFlushLocked();
}

void SocketConnection::SendCopy(std::string_view frame) {
  MutexLock lock(&out_mu_);
  if (out_closed_) return;
  QueueLocked(ws::Opcode::kText, frame);
  RequestFlushLocked();
}

void SocketConnection::SendShared(std::string_view head, std::shared_ptr<const std::string> body) {
  // The header and both parts go straight into the outgoing chunk: one
  // copy of the shared encoding, and no per-connection string.
  MutexLock lock(&out_mu_);
  if (out_closed_) return;
  std::string h;
  ws::AppendHeader(h, ws::Opcode::kText, head.size() + body->size());
  QueueRawLocked(h);
  QueueRawLocked(head);
  QueueRawLocked(*body);
  RequestFlushLocked();
}

void SocketConnection::RequestFlushLocked() {
  // A reply produced while a read is handled leaves with that read's
  // others (Received flushes at its end).
  if (loop_.InThisThread()) {
    if (processing_) return;
    // Queued by a task on the loop (a watched change for many of its
    // connections): they are all written at the end of the loop's turn, one
    // posted task for them all instead of one each. (Not through
    // FlushAtEndOfTurn(), whose lone-reader shortcut flushes at once, which
    // takes out_mu_, held here.)
    if (!flush_at_end_of_turn_ && phase_ != Phase::kDone) {
      loop_.FlushAtEndOfTurn(shared_from_this());
      flush_at_end_of_turn_ = true;
    }
    return;
  }
  if (flush_posted_) return;
  flush_posted_ = true;
  loop_.FlushFromAnyThread(shared_from_this());
}

void SocketConnection::TakePostedFlush() {
  MutexLock lock(&out_mu_);
  flush_posted_ = false;
}

void SocketConnection::Flush() {
  if (phase_ == Phase::kDone || write_armed_ || in_send_batch_) return;
  while (HasBytesToWrite()) {
    Next next = Next::kHandle;
    const size_t sent = WriteSome(&next);
    if (!AfterWrite(next, sent)) return;
  }
  if (writing_.capacity() > 4) std::vector<std::string>().swap(writing_);
  AfterDrained();
}

bool SocketConnection::HasBytesToWrite() {
  if (write_index_ < writing_.size()) return true;
  writing_.clear();
  write_index_ = 0;
  write_offset_ = 0;
  MutexLock lock(&out_mu_);
  writing_.swap(out_);
  back_shared_ = false;
  return !writing_.empty();
}

bool SocketConnection::AfterWrite(Next next, size_t sent) {
  switch (next) {
    case Next::kHandle:
      break;
    case Next::kWaitWrite:
      ArmWrite();
      return false;
    case Next::kWaitRead:
      // TLS: a write that must read first (a key update under way).
      WaitFor(tcp::socket::wait_read, &SocketConnection::write_armed_, &SocketConnection::Flush);
      return false;
    case Next::kEnd:
      Terminate();
      return false;
  }
  last_progress_ns_ = shared_.NowNs();
  out_bytes_.fetch_sub(sent, std::memory_order_relaxed);
  shared_.output_bytes.fetch_sub(static_cast<int64_t>(sent), std::memory_order_relaxed);
  while (sent > 0) {
    const size_t left = writing_[write_index_].size() - write_offset_;
    if (sent < left) {
      write_offset_ += sent;
      break;
    }
    sent -= left;
    std::string().swap(writing_[write_index_]);  // free the sent chunk now
    ++write_index_;
    write_offset_ = 0;
  }
  // The socket took less than offered: it is full. (TLS writes a record
  // at a time and says when the socket is full.)
  if (tls_ == nullptr && write_index_ < writing_.size()) {
    ArmWrite();
    return false;
  }
  return true;
}

bool SocketConnection::PrepareBatchedSend(std::vector<iovec>* iov, int* fd) {
  if (phase_ == Phase::kDone || write_armed_ || in_send_batch_ || tls_ != nullptr) return false;
  if (!HasBytesToWrite()) return false;
  for (size_t i = write_index_; i < writing_.size() && i - write_index_ < kMaxWriteBuffers; ++i) {
    const size_t skip = i == write_index_ ? write_offset_ : 0;
    iov->push_back({writing_[i].data() + skip, writing_[i].size() - skip});
  }
  *fd = socket_.native_handle();
  in_send_batch_ = true;
  return true;
}

void SocketConnection::CompleteBatchedSend(int result) {
  in_send_batch_ = false;
  Next next = Next::kHandle;
  if (result == -EAGAIN || result == -EWOULDBLOCK || result == -EINTR) {
    next = Next::kWaitWrite;
  } else if (result < 0) {
    next = Next::kEnd;
  }
  if (!AfterWrite(next, next == Next::kHandle ? static_cast<size_t>(result) : 0)) return;
  Flush();  // what was queued meanwhile, or the drained connection's next step
}

size_t SocketConnection::WriteSome(Next* next) {
  *next = Next::kHandle;
  if (tls_ != nullptr) {
    const std::string& chunk = writing_[write_index_];
    const TlsStream::Io io =
        tls_->Write(chunk.data() + write_offset_, chunk.size() - write_offset_);
    switch (io.outcome) {
      case TlsStream::Outcome::kDone:
        return io.bytes;
      case TlsStream::Outcome::kWantWrite:
        *next = Next::kWaitWrite;
        return 0;
      case TlsStream::Outcome::kWantRead:
        *next = Next::kWaitRead;
        return 0;
      case TlsStream::Outcome::kClosed:
      case TlsStream::Outcome::kFailed:
        *next = Next::kEnd;
        return 0;
    }
  }
  thread_local std::vector<asio::const_buffer> buffers;
  buffers.clear();
  for (size_t i = write_index_; i < writing_.size() && buffers.size() < kMaxWriteBuffers; ++i) {
    const size_t skip = i == write_index_ ? write_offset_ : 0;
    buffers.emplace_back(writing_[i].data() + skip, writing_[i].size() - skip);
  }
  asio::error_code ec;
  const size_t sent = socket_.send(buffers, 0, ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    *next = Next::kWaitWrite;
    return 0;
  }
  if (ec) *next = Next::kEnd;
  return ec ? 0 : sent;
}

void SocketConnection::ArmWrite() {
  if (write_armed_) return;
  WaitFor(tcp::socket::wait_write, &SocketConnection::write_armed_, &SocketConnection::Flush);
}

void SocketConnection::AfterDrained() {
  if (phase_ == Phase::kClosing) {
    // Our answer is out; after an HTTP answer or a close frame exchange the
    // server closes the TCP connection first (RFC 6455 7.1.1).
    if (respond_then_close_ || peer_closed_ || failing_) {
      if (tls_ != nullptr) tls_->Shutdown();
      asio::error_code ec;
      socket_.shutdown(tcp::socket::shutdown_send, ec);
      return Terminate();
    }
    return;  // wait for the peer's close frame
  }
  Resume();
}

}  // namespace skiff::server::internal
