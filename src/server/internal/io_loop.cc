#include "server/internal/io_loop.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include <asio/post.hpp>

#include "server/internal/socket_connection.h"

namespace skiff::server::internal {
namespace {

// How often deadlines are checked: often enough that a connection paused
// for the shared budget is retried soon after space frees, rarely enough
// that 10,000 connections cost nothing noticeable.
constexpr std::chrono::milliseconds kSweepPeriod{100};

// The loop whose thread this is (null on other threads).
thread_local const IoLoop* t_loop = nullptr;

}  // namespace

// Each loop is run by exactly one thread and its sockets are used only on
// that thread, so the reactor's per-descriptor locks are not needed; posts
// from other threads (replies of commits) still go through the scheduler's
// lock.
IoLoop::IoLoop(ListenerShared& shared)
    : shared_(shared),
      io_(ASIO_CONCURRENCY_HINT_UNSAFE_IO),
      work_(asio::make_work_guard(io_)),
      sweep_timer_(io_),
      read_buffer_(new char[kReadBufferBytes]) {}

IoLoop::~IoLoop() {
  Stop();
  Join();
}

void IoLoop::Start() {
  ArmSweep();
  thread_ = std::thread([this] {
    t_loop = this;
    if (shared_.options.io_uring) {
      std::string why;
      ring_ = SendRing::Open(&why);
      if (ring_ == nullptr) {
        Logf(shared_.logger, LogLevel::kInfo, "io",
             "sending with sendmsg, one call per connection (no io_uring: %s)", why.c_str());
      }
    }
    // A handler that throws must not take the server down; keep serving.
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        Logf(shared_.logger, LogLevel::kError, "io", "I/O loop error: %s", e.what());
      }
    }
  });
}

bool IoLoop::InThisThread() const { return t_loop == this; }

void IoLoop::Stop() {
  work_.reset();
  io_.stop();
}

void IoLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

void IoLoop::Add(SocketConnection* conn) {
  conn->slot = conns_.size();
  conns_.push_back(conn);
}

void IoLoop::Remove(SocketConnection* conn) {
  const size_t slot = conn->slot;
  if (slot >= conns_.size() || conns_[slot] != conn) return;
  conns_[slot] = conns_.back();
  conns_[slot]->slot = slot;
  conns_.pop_back();
}

void IoLoop::FlushAtEndOfTurn(std::shared_ptr<SocketConnection> conn) {
  to_flush_.push_back(std::move(conn));
  if (to_flush_.size() > 1) return;
  // Posted from a handler on this thread, it runs after the handlers the
  // same wait made ready (Asio queues it behind them).
  asio::post(io_, [this] {
    std::vector<std::shared_ptr<SocketConnection>> now;
    now.swap(to_flush_);
    FlushEach(now, &SocketConnection::TakeEndOfTurnFlush);
  });
}

void IoLoop::FlushFromAnyThread(std::shared_ptr<SocketConnection> conn) {
  {
    MutexLock lock(&remote_mu_);
    remote_flush_.push_back(std::move(conn));
    if (remote_flush_.size() > 1) return;  // the burst's task is posted
  }
  asio::post(io_, [this] {
    std::vector<std::shared_ptr<SocketConnection>> now;
    {
      MutexLock lock(&remote_mu_);
      now.swap(remote_flush_);
    }
    FlushEach(now, &SocketConnection::TakePostedFlush);
  });
}

namespace {

// One connection's failure must not leave the others' replies unwritten:
// it ends that connection only.
template <typename Fn>
void Guarded(Logger& logger, SocketConnection& c, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    Logf(logger, LogLevel::kError, "io", "writing a connection's replies: %s", e.what());
    c.Terminate();
  }
}

}  // namespace

void IoLoop::FlushEach(const std::vector<std::shared_ptr<SocketConnection>>& conns,
                       void (SocketConnection::*take)()) {
  for (const std::shared_ptr<SocketConnection>& c : conns) ((*c).*take)();
  if (ring_ == nullptr || conns.size() < 2) {
    for (const std::shared_ptr<SocketConnection>& c : conns) {
      Guarded(shared_.logger, *c, [&c] { c->Flush(); });
    }
    return;
  }
  for (size_t next = 0; next < conns.size() && ring_ != nullptr;) next = SendBatch(conns, next);
}

size_t IoLoop::SendBatch(const std::vector<std::shared_ptr<SocketConnection>>& conns,
                         size_t begin) {
  batch_iov_.clear();
  batch_iov_begin_.clear();
  batch_fds_.clear();
  batch_conns_.clear();
  batch_declined_.clear();
  size_t i = begin;
  for (; i < conns.size() && batch_conns_.size() < SendRing::kEntries; ++i) {
    SocketConnection& c = *conns[i];
    const size_t at = batch_iov_.size();
    int fd = -1;
    bool batched = false;
    Guarded(shared_.logger, c, [&] { batched = c.PrepareBatchedSend(&batch_iov_, &fd); });
    if (!batched) {
      // Written after the batch, so that nothing it sets off (a reply
      // handled, a connection ended) runs while the batch holds sockets.
      batch_declined_.push_back(&c);
      continue;
    }
    batch_iov_begin_.push_back(at);
    batch_fds_.push_back(fd);
    batch_conns_.push_back(&c);
  }
  const size_t n = batch_conns_.size();
  if (n > 0) {
    // The iovecs are all in place now (batch_iov_ no longer grows).
    batch_messages_.assign(n, msghdr{});
    for (size_t k = 0; k < n; ++k) {
      const size_t end = k + 1 < n ? batch_iov_begin_[k + 1] : batch_iov_.size();
      batch_messages_[k].msg_iov = &batch_iov_[batch_iov_begin_[k]];
      batch_messages_[k].msg_iovlen = end - batch_iov_begin_[k];
    }
    batch_results_.assign(n, 0);
    uint64_t calls = 0;
    const bool ok =
        ring_->SendAll(batch_fds_.data(), batch_messages_.data(), batch_results_.data(), n, &calls);
    shared_.batched_sends.fetch_add(n, std::memory_order_relaxed);
    shared_.batch_system_calls.fetch_add(calls, std::memory_order_relaxed);
    if (!ok) DropRing();
    for (size_t k = 0; k < n; ++k) {
      SocketConnection& c = *batch_conns_[k];
      Guarded(shared_.logger, c, [&] { c.CompleteBatchedSend(batch_results_[k]); });
    }
  }
  for (SocketConnection* c : batch_declined_) {
    Guarded(shared_.logger, *c, [c] { c->Flush(); });
  }
  // Without a ring now, what is left is written one sendmsg at a time.
  if (ring_ == nullptr) {
    for (size_t k = i; k < conns.size(); ++k) {
      SocketConnection& c = *conns[k];
      Guarded(shared_.logger, c, [&c] { c.Flush(); });
    }
    return conns.size();
  }
  return i;
}

void IoLoop::DropRing() {
  Logf(shared_.logger, LogLevel::kError, "io", "io_uring failed; sending with sendmsg from now on");
  ring_.reset();
}

bool IoLoop::ReadAlone(const SocketConnection* conn, int64_t now_ns) {
  if (conn != last_reader_) {
    last_reader_ = conn;
    last_reader_since_ns_ = now_ns;
    return false;
  }
  return now_ns - last_reader_since_ns_ > kAloneNs;
}

void IoLoop::After(std::chrono::milliseconds delay, std::function<void()> fn) {
  // The timer is made on the loop's thread, as every I/O object of the loop.
  asio::post(io_, [this, delay, fn = std::move(fn)]() mutable {
    auto timer = std::make_shared<asio::steady_timer>(io_, delay);
    timer->async_wait([timer, fn = std::move(fn)](const asio::error_code& ec) {
      if (!ec) fn();
    });
  });
}

void IoLoop::TerminateAll() {
  ForEach([](SocketConnection& c) { c.Terminate(); });
}

void IoLoop::ArmSweep() {
  sweep_timer_.expires_after(kSweepPeriod);
  sweep_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    const int64_t now = shared_.NowNs();
    ForEach([now](SocketConnection& c) { c.Sweep(now); });
    ArmSweep();
  });
}

}  // namespace skiff::server::internal
