// SocketConnection: one client connection of the listener, from the HTTP
// upgrade to the close, on standalone Asio and the src/ws frame codec.
//
// Lean by design, since a server holds thousands of them while they wait:
// an idle connection owns no read buffer (it waits for readability and
// reads into its loop's shared buffer), and buffers only what a frame left
// unfinished or its peer has not read yet. Replies produced while one read
// is handled leave together in one send.
//
// Threads: everything but Send, SendCopy, Close, Post, PostAfter and
// ReleaseBarrier runs on the connection's own loop thread (IoLoop); those
// are thread-safe, and the outgoing queue is guarded by out_mu_.
//
// socket_connection.cc has its life, handshake and read side;
// socket_connection_write.cc its outgoing queue and flush.
#ifndef SKIFF_SERVER_INTERNAL_SOCKET_CONNECTION_H_
#define SKIFF_SERVER_INTERNAL_SOCKET_CONNECTION_H_

#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <asio/ip/tcp.hpp>
#include <sys/uio.h>

#include "base/mutex.h"
#include "server/internal/connection.h"
#include "server/internal/listener_shared.h"
#include "server/internal/tls_stream.h"

#include "ws/frame.h"

namespace skiff::server::internal {

class IoLoop;

class SocketConnection final : public Connection,
                               public std::enable_shared_from_this<SocketConnection> {
 public:
  // Takes over an accepted socket on `loop`'s thread. With a non-empty
  // `refusal` the connection only reads the request and answers 503 with it.
  static void Start(IoLoop& loop, ListenerShared& shared, asio::ip::tcp::socket socket,
                    std::string address_key, std::string refusal);

  SocketConnection(IoLoop& loop, ListenerShared& shared, asio::ip::tcp::socket socket,
                   std::string address_key, std::string refusal);
  ~SocketConnection() override;

  // Connection (thread-safe).
  void Send(std::string frame) override;
  void SendCopy(std::string_view frame) override;
  void SendShared(std::string_view head, std::shared_ptr<const std::string> body) override;
  size_t unsent_bytes() const override { return out_bytes_.load(std::memory_order_relaxed); }
  void Close(uint16_t code, const std::string& reason) override;
  void Post(std::function<void()> fn) override;
  void PostAfter(std::chrono::milliseconds delay, std::function<void()> fn) override;
  const void* loop() const override { return &loop_; }
  void RunOnLoop(std::function<void()> fn) override;
  void ReleaseBarrier() override;
  std::string_view remote_address() const override { return remote_address_; }

  // Loop thread: enforces the deadlines (handshake, frame, send, idle,
  // closing) and retries a connection paused for the shared budget.
  void Sweep(int64_t now_ns);
  // Loop thread: ends the connection at once (shutdown, a fatal error).
  void Terminate();
  // Loop thread: the loop is about to write the replies of the reads
  // handled this turn (IoLoop::FlushAtEndOfTurn), or what other threads
  // queued (IoLoop::FlushFromAnyThread); a new reply asks again.
  void TakeEndOfTurnFlush() { flush_at_end_of_turn_ = false; }
  void TakePostedFlush();
  // Loop thread: writes as much as the socket takes now.
  void Flush();
  // Loop thread, for a pass that sends for many connections in one system
  // call (IoLoop, SendRing): appends the iovecs of this connection's next
  // send and returns true, or false when it has no part in the batch
  // (nothing to send, a TLS connection, or waiting for writability), in
  // which case Flush() does what is left. A true must be followed by
  // CompleteBatchedSend with the send's result (bytes or -errno) before
  // anything else runs on the connection.
  bool PrepareBatchedSend(std::vector<iovec>* iov, int* fd);
  void CompleteBatchedSend(int result);

  // The loop's registry slot (loop thread only).
  size_t slot = 0;

 private:
  enum class Phase { kHandshake, kOpen, kClosing, kDone };
  enum class Pause { kNone, kInFlight, kBarrier, kOutput, kBudget };

  void Begin();
  // Waits for the socket to be readable or writable, with *armed set
  // meanwhile, then runs `then`.
  void WaitFor(asio::socket_base::wait_type what, bool SocketConnection::*armed,
               void (SocketConnection::*then)());
  void ArmRead();
  void ScheduleRead();
  void OnReadable();
  // Handles `n` bytes read into `data` (the loop's buffer).
  void Received(char* data, size_t n);
  // Handles bytes already buffered (after a pause).
  void ProcessBuffered();
  // Bookkeeping after input was handled: frees an emptied buffer, updates
  // the budget and the unfinished-frame clock.
  void AfterInput(bool incomplete);
  // Runs the handshake or the frames over [data, data + size); returns the
  // bytes consumed. *incomplete: what is left is an unfinished frame (not
  // frames held back by a pause).
  size_t Process(char* data, size_t size, bool* incomplete);
  size_t ProcessHandshake(char* data, size_t size);
  size_t ProcessFrames(char* data, size_t size, bool* incomplete);
  // One whole message; false to stop reading further messages for now.
  bool OnMessage(const ws::Message& m);
  // Why the connection may not read now (kNone: it may).
  Pause ReadBlocker() const;
  bool HoldsBuffers() const;
  // Reads again once nothing blocks it.
  void Resume();

  // The outgoing queue: bytes as they are, or one frame.
  void QueueRawLocked(std::string_view bytes) SKIFF_REQUIRES(out_mu_);
  void QueueLocked(ws::Opcode opcode, std::string_view payload) SKIFF_REQUIRES(out_mu_);
  void CountQueued(size_t bytes);
  // Makes sure queued frames get written: at the end of the read being
  // handled, else by a posted flush.
  void RequestFlushLocked() SKIFF_REQUIRES(out_mu_);
  // Has the loop flush at the end of its turn, once per turn.
  void FlushAtEndOfTurn();
  void ArmWrite();
  void AfterDrained();
  // Answers a plain HTTP request (or refusal) and closes once it is sent.
  void RespondAndClose(std::string response);
  // Queues a close frame and stops taking requests.
  void BeginClose(uint16_t code, std::string_view reason);
  // Keeps the shared input count in step with what this connection holds.
  void AccountInput();
  // One read from the socket, through TLS when the listener serves it:
  // the bytes read, or 0 with *next saying what to do instead.
  enum class Next { kHandle, kWaitRead, kWaitWrite, kEnd };
  size_t ReadSome(char* buffer, size_t capacity, Next* next);
  // Writes from writing_ at write_index_/write_offset_: the bytes taken,
  // or 0 with *next saying what to do instead.
  size_t WriteSome(Next* next);
  // Moves the queue into writing_ once all of writing_ is sent; false when
  // nothing is left to write.
  bool HasBytesToWrite();
  // Accounts for one write's outcome; false when the flush stops here
  // (waiting for the socket, or the connection ended).
  bool AfterWrite(Next next, size_t sent);

  IoLoop& loop_;
  ListenerShared& shared_;
  asio::ip::tcp::socket socket_;
  const std::string address_key_;  // per-address accounting; empty when off
  std::string refusal_;            // non-empty: answer 503 with it
  std::string remote_address_;     // set in Begin, before any request
  // Keeps the connection alive until Terminate; handler calls get it.
  std::shared_ptr<Connection> self_;
  // The TLS session on a wss:// listener; null on a plain one.
  std::unique_ptr<TlsStream> tls_;

  // Loop thread only.
  Phase phase_ = Phase::kHandshake;
  Pause pause_ = Pause::kNone;
  bool opened_ = false;                // the handshake completed
  bool read_armed_ = false;            // an async_wait for reading is pending
  bool read_scheduled_ = false;        // a posted read attempt is pending
  bool write_armed_ = false;           // an async_wait for writing is pending
  bool processing_ = false;            // inside Process (replies wait for its end)
  bool flush_at_end_of_turn_ = false;  // the loop writes the replies at the end of its turn
  bool peer_closed_ = false;           // the peer's close frame arrived
  bool failing_ = false;               // close at once after our close frame
  bool held_back_ = false;             // in_ starts with whole frames a pause held back
  bool respond_then_close_ = false;    // a plain HTTP answer is on its way
  bool read_alone_ = false;            // the last read was the loop's only one lately
  bool in_send_batch_ = false;         // a batched send of writing_ is under way
  std::string in_;                     // bytes read but not yet consumed
  size_t in_accounted_ = 0;            // what AccountInput last reported
  size_t in_needed_ = 0;               // bytes the frame at the front of in_ needs
  ws::FrameReader reader_;
  int64_t started_ns_ = 0;            // accepted; for the handshake deadline
  int64_t partial_since_ns_ = 0;      // first byte of an unfinished frame, or 0
  int64_t closing_since_ns_ = 0;      // our close (or HTTP answer) was queued
  int64_t last_progress_ns_ = 0;      // bytes last left while output waited
  std::vector<std::string> writing_;  // being written: chunks, in order
  size_t write_index_ = 0;            // first chunk of writing_ not all sent
  size_t write_offset_ = 0;           // bytes of that chunk already sent

  // Outgoing bytes, in order, as chunks: small frames share a chunk; a
  // large one keeps a chunk of its own so it is never copied.
  Mutex out_mu_;
  std::vector<std::string> out_ SKIFF_GUARDED_BY(out_mu_);
  bool back_shared_ SKIFF_GUARDED_BY(out_mu_) = false;  // out_.back() takes more frames
  bool flush_posted_ SKIFF_GUARDED_BY(out_mu_) = false;
  bool out_closed_ SKIFF_GUARDED_BY(out_mu_) = false;  // a close is queued or done
  std::atomic<size_t> out_bytes_{0};                   // queued or being written, not yet sent
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_SOCKET_CONNECTION_H_
