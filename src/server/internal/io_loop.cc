#include "server/internal/io_loop.h"

#include <algorithm>
#include <exception>
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
    FlushEach(now, &SocketConnection::FlushQueuedReplies);
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
    FlushEach(now, &SocketConnection::FlushPosted);
  });
}

void IoLoop::FlushEach(const std::vector<std::shared_ptr<SocketConnection>>& conns,
                       void (SocketConnection::*write)()) {
  for (const std::shared_ptr<SocketConnection>& c : conns) {
    // One connection's failure must not leave the others' replies
    // unwritten: it ends that connection only.
    try {
      ((*c).*write)();
    } catch (const std::exception& e) {
      Logf(shared_.logger, LogLevel::kError, "io", "writing a connection's replies: %s", e.what());
      c->Terminate();
    }
  }
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
