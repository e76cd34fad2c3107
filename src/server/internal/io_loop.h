// IoLoop: one I/O thread with its own Asio event loop and the connections
// it owns (one io_context per thread, so a connection's handlers never run
// on two threads and need no strand).
//
// The loop also keeps a read buffer that its connections share (a
// connection reads into it and keeps only what a frame left unfinished),
// a sweep timer that enforces the connections' deadlines, and the
// connections whose replies leave at the end of the loop's turn.
// Start, Stop, Join, After and context() are thread-safe; Add, Remove, ForEach,
// read_buffer() and FlushAtEndOfTurn run on the loop's thread only.
#ifndef SKIFF_SERVER_INTERNAL_IO_LOOP_H_
#define SKIFF_SERVER_INTERNAL_IO_LOOP_H_

#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/mutex.h"
#include "server/internal/listener_shared.h"
#include "server/internal/send_ring.h"

namespace skiff::server::internal {

class SocketConnection;

class IoLoop {
 public:
  static constexpr size_t kReadBufferBytes = 64 * 1024;

  explicit IoLoop(ListenerShared& shared);
  ~IoLoop();  // Stop() and Join()
  IoLoop(const IoLoop&) = delete;
  IoLoop& operator=(const IoLoop&) = delete;

  asio::io_context& context() { return io_; }
  void Start();
  // Stops the event loop; handlers not run yet are dropped.
  void Stop();
  void Join();
  // True on this loop's thread.
  bool InThisThread() const;

  void Add(SocketConnection* conn);
  void Remove(SocketConnection* conn);
  // Copies the registry first, so `fn` may end connections.
  template <typename Fn>
  void ForEach(Fn&& fn) {
    std::vector<SocketConnection*> all = conns_;
    for (SocketConnection* c : all) fn(*c);
  }
  // After Stop and Join: ends every connection still open, on the caller's
  // thread (the loop's thread is gone).
  void TerminateAll();

  char* read_buffer() { return read_buffer_.get(); }

  // Writes `conn`'s replies once every handler made ready by the loop's
  // last wait for events has run: the loop reads all the connections that
  // are ready, then writes all their replies, as Redis does. On geo_bench
  // inserts (16 connections, one request in flight each) this took 5-7% off
  // skiffd's CPU per request against writing each connection's replies
  // straight after its read (docs/benchmarks.md, "Replies at the end of the
  // loop's turn").
  void FlushAtEndOfTurn(std::shared_ptr<SocketConnection> conn);

  // Thread-safe: has the loop write `conn`'s queued frames soon. Frames
  // queued on other threads (replies of commits, woken waits, watched
  // changes: often thousands at once) gather here, and one task per burst
  // writes them all, instead of one task per connection.
  void FlushFromAnyThread(std::shared_ptr<SocketConnection> conn);

  // Called at each read with its time: true when no other connection of
  // this loop has read for kAloneNs. Such a lone connection gains nothing
  // from the end-of-turn flush and would pay for it: its reply would wait
  // for one more (non-blocking) wait for events before it leaves. Its
  // replies then leave as soon as its read is handled.
  bool ReadAlone(const SocketConnection* conn, int64_t now_ns);
  static constexpr int64_t kAloneNs = 2'000'000;

  // Runs `fn` on this loop's thread once `delay` has passed (a request held
  // for a moment, a link opened again); dropped if the loop stops first.
  // Thread-safe.
  void After(std::chrono::milliseconds delay, std::function<void()> fn);

 private:
  void ArmSweep();
  // Writes the queues of `conns`, each connection's failure ending that
  // connection only; `take` first clears each one's request to be flushed.
  // Through the ring when there is one and several connections write.
  void FlushEach(const std::vector<std::shared_ptr<SocketConnection>>& conns,
                 void (SocketConnection::*take)());
  // Sends for conns[begin..] through the ring until kEntries of them are
  // in one submission; returns where it stopped.
  size_t SendBatch(const std::vector<std::shared_ptr<SocketConnection>>& conns, size_t begin);
  // The ring failed: logs it and sends with sendmsg from now on.
  void DropRing();

  ListenerShared& shared_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::steady_timer sweep_timer_;
  std::vector<SocketConnection*> conns_;                     // loop thread only
  std::vector<std::shared_ptr<SocketConnection>> to_flush_;  // loop thread only
  Mutex remote_mu_;
  std::vector<std::shared_ptr<SocketConnection>> remote_flush_ SKIFF_GUARDED_BY(remote_mu_);
  // The connection that read last (compared, never followed) and since
  // when it has been the only one reading. Loop thread only.
  const SocketConnection* last_reader_ = nullptr;
  int64_t last_reader_since_ns_ = 0;
  std::unique_ptr<char[]> read_buffer_;
  // Made on the loop's thread when it starts; null when io_uring is off or
  // refused. One batch's sends, reused from pass to pass (loop thread).
  std::unique_ptr<SendRing> ring_;
  std::vector<iovec> batch_iov_;
  std::vector<size_t> batch_iov_begin_;
  std::vector<msghdr> batch_messages_;
  std::vector<int> batch_fds_;
  std::vector<int> batch_results_;
  std::vector<SocketConnection*> batch_conns_;
  std::vector<SocketConnection*> batch_declined_;
  std::thread thread_;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_IO_LOOP_H_
