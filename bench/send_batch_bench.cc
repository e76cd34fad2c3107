// The send_batch family: one fan-out pass written with N sendmsg calls or
// with one io_uring submission.
//
// skiffd delivers a watched change by writing each watcher's queue with one
// sendmsg per connection (IoLoop::FlushEach). This family asks whether
// batching the N sends of one pass into io_uring submissions would save
// enough CPU to be worth it. The connections are N loopback TCP pairs of
// this process (TCP_NODELAY); one iteration is one pass: a ~120-byte
// WebSocket frame sent once to each of the N sending ends. Methods:
//   sendmsg         N sendmsg(MSG_NOSIGNAL) calls, as the server does
//   io_uring        N IORING_OP_SENDMSG entries, one io_uring_submit_and_wait
//                   per ring-full (the ring holds a whole pass: one call)
//   io_uring_fixed  the same on registered files (no descriptor lookup)
//   io_uring_sqpoll the same with a kernel submission thread
//                   (IORING_SETUP_SQPOLL): no call while it is awake
// sendmmsg is not a candidate: it sends several messages on one socket,
// and a pass sends one message on each of N sockets.
//
// The case's time is the sending part only (manual time); after it, and
// outside it, the receiving ends are read so no buffer fills. The CPU per
// send is the process's CPU clock over the sending part: on loopback it
// includes the receiver's TCP work, done in softirq on the sender's CPU, and
// the SQPOLL thread, a thread of this process. Every send must report the
// whole frame, and after the loop every receiving end must have read
// exactly the frames sent to it, byte for byte, or the case fails.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"

namespace skiff::bench {
namespace {

constexpr size_t kFrameBytes = 120;
// Descriptors kept free beside the pairs (stdio, the listener, the ring,
// the JSON output).
constexpr uint64_t kSpareDescriptors = 64;
// io_uring's largest submission queue (IORING_MAX_ENTRIES).
constexpr unsigned kMaxRingEntries = 32768;

// A WebSocket text frame of kFrameBytes: a 2-byte header and a change event
// as skiffd would push it, padded.
std::string MakeFrame() {
  std::string payload = R"({"op":"change","key":"fan/watched/key","version":1234567,"value":{"n":)";
  while (payload.size() + 2 + 3 < kFrameBytes) payload += '7';
  payload += "}}";
  payload.resize(kFrameBytes - 2, ' ');
  std::string frame = {static_cast<char>(0x81), static_cast<char>(payload.size())};
  return frame + payload;
}

const std::string& Frame() {
  static const std::string* frame = new std::string(MakeFrame());  // used until exit
  return *frame;
}

double Seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// CPU time of one system call that does nothing (getppid), in µs: what
// each call costs to enter and leave the kernel on this machine (page-table
// isolation without PCID makes it several times a modern host's).
double NullSyscallMicros() {
  constexpr int kCalls = 100000;
  const double start = Seconds(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < kCalls; ++i) syscall(SYS_getppid);
  return (Seconds(CLOCK_PROCESS_CPUTIME_ID) - start) * 1e6 / kCalls;
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Pairs that fit the descriptor limit, after raising the soft limit to the
// hard one (and the hard one too where the process may).
size_t PairsThatFit(size_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const rlim_t need = 2 * wanted + kSpareDescriptors;
  if (limit.rlim_cur < need) {
    rlimit raised = limit;
    raised.rlim_cur = raised.rlim_max = std::max(limit.rlim_max, need);
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
      raised.rlim_cur = raised.rlim_max = limit.rlim_max;
      setrlimit(RLIMIT_NOFILE, &raised);
    }
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur <= kSpareDescriptors) return 0;
  return std::min<size_t>(wanted, (limit.rlim_cur - kSpareDescriptors) / 2);
}

// N connected loopback TCP pairs: the sending ends play the server's
// connections, the receiving ends its watchers. Tracks what each receiving
// end read and checks it against the stream of frames sent.
class SocketPairs {
 public:
  // nullptr with *error set when a socket cannot be made or connected.
  static std::unique_ptr<SocketPairs> Open(size_t n, std::string* error) {
    std::unique_ptr<SocketPairs> pairs(new SocketPairs);
    if (!pairs->Connect(n, error)) return nullptr;
    return pairs;
  }
  ~SocketPairs() {
    // Reset, not FIN: no TIME_WAIT left behind by 10,000 connections.
    const linger reset = {1, 0};
    for (int fd : receivers_) {
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      close(fd);
    }
    for (int fd : senders_) close(fd);
  }
  SocketPairs(const SocketPairs&) = delete;
  SocketPairs& operator=(const SocketPairs&) = delete;

  size_t size() const { return senders_.size(); }
  const std::vector<int>& senders() const { return senders_; }

  // Every sending end sent one more whole frame.
  void CountPass() { sent_per_pair_ += Frame().size(); }

  // One read of each receiving end: what arrived is checked now, the rest
  // is read by the next Drain or by DrainAll.
  void Drain() {
    for (size_t i = 0; i < receivers_.size(); ++i) ReadOnce(i);
  }

  // Reads until every receiving end has everything sent to it; false when
  // that takes longer than `timeout_s`.
  bool DrainAll(double timeout_s) {
    const double deadline = Seconds(CLOCK_MONOTONIC) + timeout_s;
    for (;;) {
      bool missing = false;
      for (size_t i = 0; i < receivers_.size(); ++i) {
        while (received_[i] < sent_per_pair_ && ReadOnce(i)) {
        }
        missing |= received_[i] < sent_per_pair_;
      }
      if (!missing) return true;
      if (Seconds(CLOCK_MONOTONIC) > deadline) return false;
      usleep(1000);
    }
  }

  // Bytes sent and not read, over every pair.
  uint64_t MissingBytes() const {
    uint64_t missing = 0;
    for (uint64_t r : received_) missing += sent_per_pair_ > r ? sent_per_pair_ - r : 0;
    return missing;
  }
  // Bytes read that were not the frame stream's (or read beyond it).
  uint64_t WrongBytes() const {
    uint64_t extra = 0;
    for (uint64_t r : received_) extra += r > sent_per_pair_ ? r - sent_per_pair_ : 0;
    return wrong_bytes_ + extra;
  }

 private:
  SocketPairs() : buffer_(64 * 1024) {}

  bool Connect(size_t n, std::string* error) {
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) return *error = Errno("socket"), false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listener, 4096) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      *error = Errno("listen on 127.0.0.1");
      close(listener);
      return false;
    }
    const int one = 1;
    // One at a time: the accepted socket is the peer of the one connected.
    for (size_t i = 0; i < n; ++i) {
      const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (client < 0) {
        *error = Errno("socket");
        break;
      }
      if (connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        *error = Errno("connect");
        close(client);
        break;
      }
      const int server = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (server < 0) {
        *error = Errno("accept");
        close(client);
        break;
      }
      fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK);
      setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      senders_.push_back(server);
      receivers_.push_back(client);
    }
    close(listener);
    received_.assign(receivers_.size(), 0);
    return senders_.size() == n;
  }

  // One non-blocking read of receiving end i; true when it read something.
  bool ReadOnce(size_t i) {
    const ssize_t r = recv(receivers_[i], buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (r <= 0) return false;
    const std::string& frame = Frame();
    uint64_t at = received_[i];
    const char* p = buffer_.data();
    size_t left = static_cast<size_t>(r);
    while (left > 0) {
      const size_t offset = at % frame.size();
      const size_t take = std::min(left, frame.size() - offset);
      if (std::memcmp(p, frame.data() + offset, take) != 0) wrong_bytes_ += take;
      p += take;
      left -= take;
      at += take;
    }
    received_[i] = at;
    return true;
  }

  std::vector<int> senders_;
  std::vector<int> receivers_;
  std::vector<uint64_t> received_;  // bytes read from each receiving end
  uint64_t sent_per_pair_ = 0;
  uint64_t wrong_bytes_ = 0;
  std::vector<char> buffer_;
};

// The pairs of the running case. Cases of one size run one after another
// (registration order) and share them; a case of another size replaces
// them. nullptr with *error set when they cannot be opened.
SocketPairs* PairsFor(size_t n, std::string* error) {
  static std::unique_ptr<SocketPairs>* pairs = new std::unique_ptr<SocketPairs>;  // until exit
  if (*pairs && (*pairs)->size() == n) return pairs->get();
  pairs->reset();  // close the old ones before opening more
  *pairs = SocketPairs::Open(n, error);
  return pairs->get();
}

// Writes one pass: the frame once on every sending end.
class PassWriter {
 public:
  virtual ~PassWriter() = default;
  // False, with error() set, when a send did not take the whole frame.
  virtual bool Pass() = 0;
  // System calls made by the passes so far.
  uint64_t syscalls() const { return syscalls_; }
  const std::string& error() const { return error_; }

 protected:
  uint64_t syscalls_ = 0;
  std::string error_;
};

class SendmsgWriter : public PassWriter {
 public:
  explicit SendmsgWriter(const std::vector<int>& fds) : fds_(fds) {}

  bool Pass() override {
    iovec iov = {const_cast<char*>(Frame().data()), Frame().size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    for (int fd : fds_) {
      const ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
      ++syscalls_;
      if (sent != static_cast<ssize_t>(iov.iov_len)) {
        error_ = sent < 0 ? Errno("sendmsg") : "sendmsg sent part of a frame";
        return false;
      }
    }
    return true;
  }

 private:
  const std::vector<int>& fds_;
};

enum class Ring { kPlain, kFixedFiles, kSqpoll };

class UringWriter : public PassWriter {
 public:
  // nullptr with *error set when the ring cannot be set up; *unavailable
  // says the kernel or its settings refuse the mode (a skip, not a failure).
  static std::unique_ptr<UringWriter> Make(const std::vector<int>& fds, Ring mode,
                                           std::string* error, bool* unavailable) {
    std::unique_ptr<UringWriter> w(new UringWriter(fds, mode));
    if (!w->Init(error, unavailable)) return nullptr;
    return w;
  }
  ~UringWriter() override {
    if (ready_) io_uring_queue_exit(&ring_);
  }

  bool Pass() override {
    const size_t n = fds_.size();
    for (size_t done = 0; done < n;) {
      const size_t chunk = std::min<size_t>(n - done, entries_);
      for (size_t i = done; i < done + chunk; ++i) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) return Fail("the submission queue is full");
        if (mode_ == Ring::kFixedFiles) {
          io_uring_prep_sendmsg(sqe, static_cast<int>(i), &messages_[i], MSG_NOSIGNAL);
          io_uring_sqe_set_flags(sqe, IOSQE_FIXED_FILE);
        } else {
          io_uring_prep_sendmsg(sqe, fds_[i], &messages_[i], MSG_NOSIGNAL);
        }
        sqe->user_data = i;
      }
      if (mode_ == Ring::kSqpoll) {
        // io_uring_submit enters the kernel only to wake a sleeping thread.
        if (IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_NEED_WAKEUP) ++syscalls_;
        const int r = io_uring_submit(&ring_);
        if (r < 0) return Fail("io_uring_submit", -r);
      } else {
        // Sends on sockets with room complete during the submission, so
        // the wait returns at once: one call submits and reaps.
        const int r = io_uring_submit_and_wait(&ring_, static_cast<unsigned>(chunk));
        ++syscalls_;
        if (r < 0 && r != -EINTR) return Fail("io_uring_submit_and_wait", -r);
      }
      if (!Reap(chunk)) return false;
      done += chunk;
    }
    return true;
  }

 private:
  UringWriter(const std::vector<int>& fds, Ring mode)
      : fds_(fds), mode_(mode), iov_{const_cast<char*>(Frame().data()), Frame().size()} {
    messages_.resize(fds.size());
    for (msghdr& m : messages_) {
      m.msg_iov = &iov_;
      m.msg_iovlen = 1;
    }
  }

  bool Init(std::string* error, bool* unavailable) {
    entries_ = 1;
    while (entries_ < fds_.size() && entries_ < kMaxRingEntries) entries_ *= 2;
    io_uring_params params{};
    if (mode_ == Ring::kSqpoll) {
      params.flags = IORING_SETUP_SQPOLL;
      params.sq_thread_idle = 100;  // ms awake after its last work
    } else {
      params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN;
    }
    int r = io_uring_queue_init_params(entries_, &ring_, &params);
    if (r == -EINVAL && mode_ != Ring::kSqpoll) {  // a kernel before 6.0
      params = {};
      r = io_uring_queue_init_params(entries_, &ring_, &params);
    }
    if (r < 0) {
      *unavailable = r == -EPERM || r == -ENOSYS || r == -EINVAL;
      *error = std::string("io_uring_queue_init: ") + std::strerror(-r);
      return false;
    }
    ready_ = true;
    if (mode_ == Ring::kFixedFiles) {
      r = io_uring_register_files(&ring_, fds_.data(), static_cast<unsigned>(fds_.size()));
      if (r < 0) {
        *error = std::string("io_uring_register_files: ") + std::strerror(-r);
        return false;
      }
    }
    return true;
  }

  // Takes `count` completions; each must have sent the whole frame.
  bool Reap(size_t count) {
    size_t reaped = 0;
    int idle = 0;
    while (reaped < count) {
      unsigned head = 0;
      unsigned seen = 0;
      io_uring_cqe* cqe = nullptr;
      bool short_send = false;
      int res = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        if (cqe->res != static_cast<int>(iov_.iov_len)) {
          short_send = true;
          res = cqe->res;
        }
        ++seen;
      }
      io_uring_cq_advance(&ring_, seen);
      reaped += seen;
      if (short_send) {
        return res < 0 ? Fail("a send's completion", -res) : Fail("a send took part of a frame");
      }
      if (seen > 0 || reaped == count) {
        idle = 0;
        continue;
      }
      // Nothing yet: the SQPOLL thread is still at it (spin a little,
      // then sleep in the kernel), or a send waits for room.
      if (mode_ == Ring::kSqpoll && ++idle < 1000) continue;
      const int r = io_uring_wait_cqe(&ring_, &cqe);
      ++syscalls_;
      if (r < 0 && r != -EINTR) return Fail("io_uring_wait_cqe", -r);
      idle = 0;
    }
    return true;
  }

  bool Fail(const char* what, int err = 0) {
    error_ = err != 0 ? std::string(what) + ": " + std::strerror(err) : what;
    return false;
  }

  const std::vector<int>& fds_;
  const Ring mode_;
  iovec iov_;
  std::vector<msghdr> messages_;  // one per connection, as a server keeps them
  unsigned entries_ = 0;
  io_uring ring_{};
  bool ready_ = false;
};

enum class Method { kSendmsg, kUring, kUringFixed, kUringSqpoll };

const char* MethodName(Method m) {
  switch (m) {
    case Method::kSendmsg:
      return "sendmsg";
    case Method::kUring:
      return "io_uring";
    case Method::kUringFixed:
      return "io_uring_fixed";
    case Method::kUringSqpoll:
      return "io_uring_sqpoll";
  }
  return "?";
}

// nullptr after ending the case (an error, or a skip with its reason).
std::unique_ptr<PassWriter> MakeWriter(benchmark::State& state, Method method,
                                       const std::vector<int>& fds) {
  if (method == Method::kSendmsg) return std::make_unique<SendmsgWriter>(fds);
  const Ring mode = method == Method::kUring        ? Ring::kPlain
                    : method == Method::kUringFixed ? Ring::kFixedFiles
                                                    : Ring::kSqpoll;
  std::string error;
  bool unavailable = false;
  std::unique_ptr<UringWriter> w = UringWriter::Make(fds, mode, &error, &unavailable);
  if (w) return w;
  if (unavailable) {
    std::fprintf(stderr, "send_batch_bench: *** %s: %s; skipped ***\n", MethodName(method),
                 error.c_str());
    error = "skipped: " + error;
  }
  state.SkipWithError(error.c_str());
  return nullptr;
}

void BM_SendPass(benchmark::State& state, Method method) {
  const size_t wanted = static_cast<size_t>(state.range(0));
  const size_t n = PairsThatFit(wanted);
  if (n == 0) return state.SkipWithError("no descriptors left for a socket pair");
  std::string error;
  SocketPairs* pairs = PairsFor(n, &error);
  if (pairs == nullptr) return state.SkipWithError(("opening the pairs: " + error).c_str());
  if (n < wanted) {
    std::fprintf(stderr, "send_batch_bench: %zu pairs fit the descriptor limit, not %zu\n", n,
                 wanted);
    state.SetLabel("capped at " + std::to_string(n) + " pairs by the descriptor limit");
  }
  std::unique_ptr<PassWriter> writer = MakeWriter(state, method, pairs->senders());
  if (!writer) return;

  const double null_syscall_us = NullSyscallMicros();
  double send_wall = 0;
  double send_cpu = 0;
  double drain_cpu = 0;
  uint64_t passes = 0;
  for (auto _ : state) {
    const double cpu0 = Seconds(CLOCK_PROCESS_CPUTIME_ID);
    const double wall0 = Seconds(CLOCK_MONOTONIC);
    const bool ok = writer->Pass();
    const double wall1 = Seconds(CLOCK_MONOTONIC);
    const double cpu1 = Seconds(CLOCK_PROCESS_CPUTIME_ID);
    state.SetIterationTime(wall1 - wall0);
    if (!ok) {
      state.SkipWithError(writer->error().c_str());
      break;
    }
    send_wall += wall1 - wall0;
    send_cpu += cpu1 - cpu0;
    ++passes;
    pairs->CountPass();
    pairs->Drain();
    drain_cpu += Seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu1;
  }
  if (passes == 0) return;
  if (!pairs->DrainAll(10.0)) {
    return state.SkipWithError(
        (std::to_string(pairs->MissingBytes()) + " bytes sent were never received").c_str());
  }
  if (pairs->WrongBytes() > 0) {
    return state.SkipWithError(
        (std::to_string(pairs->WrongBytes()) + " bytes received differ from the frames").c_str());
  }
  const double sends = static_cast<double>(passes) * static_cast<double>(n);
  SetDeterministic(state, "connections", static_cast<double>(n));
  SetDeterministic(state, "frame_bytes", static_cast<double>(Frame().size()));
  const double calls = static_cast<double>(writer->syscalls()) / static_cast<double>(passes);
  if (method == Method::kUringSqpoll) {
    // How often the thread was asleep or a completion late: varies.
    SetInfo(state, "sqpoll_syscalls_per_pass", calls);
  } else {
    SetDeterministic(state, "syscalls_per_pass", calls);
  }
  SetJudged(state, "cpu_us_per_send", send_cpu * 1e6 / sends);
  SetInfo(state, "sends_per_s", sends / send_wall);
  SetInfo(state, "send_cores", send_cpu / send_wall);
  SetInfo(state, "drain_cpu_us_per_send", drain_cpu * 1e6 / sends);
  SetInfo(state, "null_syscall_us", null_syscall_us);
  state.SetItemsProcessed(static_cast<int64_t>(sends));
}

const bool kRegistered = AddRegistration([] {
  std::vector<int64_t> sizes = {1000};
  if (Options().profile != Profile::kQuick) sizes.push_back(10000);
  for (int64_t n : sizes) {
    // Passes per case: about 200,000 sends (quick) or 1,000,000.
    const int64_t passes = ByProfile<int64_t>(200000, 1000000, 3000000) / n;
    // Size-major, so the cases of one size share its pairs.
    for (Method m : {Method::kSendmsg, Method::kUring, Method::kUringFixed, Method::kUringSqpoll}) {
      AddCase(std::string("BM_SendPass/") + MethodName(m),
              [m](benchmark::State& state) { BM_SendPass(state, m); })
          ->ArgName("n")
          ->Arg(n)
          ->UseManualTime()
          ->Iterations(passes)
          ->Unit(benchmark::kMicrosecond);
    }
  }
});

}  // namespace
}  // namespace skiff::bench
