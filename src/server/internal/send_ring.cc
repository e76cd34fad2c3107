#include "server/internal/send_ring.h"

#include <cerrno>
#include <cstring>
#include <utility>

#ifdef SKIFF_HAVE_LIBURING
#include <liburing.h>
#endif

namespace skiff::server::internal {

#ifdef SKIFF_HAVE_LIBURING

struct SendRing::Ring {
  io_uring ring{};
  ~Ring() { io_uring_queue_exit(&ring); }
};

std::unique_ptr<SendRing> SendRing::Open(std::string* why) {
  auto ring = std::make_unique<Ring>();
  io_uring_params params{};
  // One thread submits and reaps (the loop's); completions are reaped in
  // the same call, so the kernel need not interrupt the thread for them.
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN;
  int r = io_uring_queue_init_params(kEntries, &ring->ring, &params);
  if (r == -EINVAL) {  // a kernel before 6.0 knows neither flag
    params = {};
    r = io_uring_queue_init_params(kEntries, &ring->ring, &params);
  }
  if (r < 0) {
    *why = std::string("io_uring_queue_init: ") + std::strerror(-r);
    ring.release();  // nothing to exit: the ring was never set up
    return nullptr;
  }
  return std::unique_ptr<SendRing>(new SendRing(std::move(ring)));
}

bool SendRing::SendAll(const int* fds, msghdr* messages, int* results, size_t count,
                       uint64_t* calls) {
  io_uring* ring = &ring_->ring;
  for (size_t i = 0; i < count; ++i) {
    // The queue holds kEntries and every call reaps all it submitted.
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    io_uring_prep_sendmsg(sqe, fds[i], &messages[i], MSG_DONTWAIT | MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, i);
    results[i] = -EIO;
  }
  size_t reaped = 0;
  int retries = 0;
  while (reaped < count) {
    // Submits what the kernel has not taken yet and waits for the rest.
    // Non-blocking sends complete while they are submitted, so one call
    // submits and reaps them all.
    const int r = io_uring_submit_and_wait(ring, static_cast<unsigned>(count - reaped));
    ++*calls;
    const bool transient = r == -EINTR || r == -EAGAIN || r == -EBUSY;
    if (r < 0 && !transient) return false;
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(ring, head, cqe) {
      const uint64_t i = io_uring_cqe_get_data64(cqe);
      if (i < count) results[i] = cqe->res;
      ++seen;
    }
    io_uring_cq_advance(ring, seen);
    reaped += seen;
    if (seen == 0 && r < 0 && ++retries > kMaxRetries) return false;
  }
  return true;
}

#else  // no liburing at build time

struct SendRing::Ring {};

std::unique_ptr<SendRing> SendRing::Open(std::string* why) {
  *why = "built without liburing";
  return nullptr;
}

bool SendRing::SendAll(const int*, msghdr*, int* results, size_t count, uint64_t*) {
  for (size_t i = 0; i < count; ++i) results[i] = -ENOSYS;
  return false;
}

#endif

SendRing::SendRing(std::unique_ptr<Ring> ring) : ring_(std::move(ring)) {}
SendRing::~SendRing() = default;

}  // namespace skiff::server::internal
