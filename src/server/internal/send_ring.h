// SendRing: the sends of one pass of an I/O loop handed to the kernel in
// one system call (io_uring, through Debian's liburing), instead of one
// sendmsg per connection.
//
// Why: a watched change or a burst of woken waits writes to thousands of
// connections in one pass. This machine's kernel runs with page-table
// isolation and no PCID, so every system call costs about 1 µs before it
// does any work; send_batch_bench measured 0.34-0.59x the CPU per send
// with one submission per pass against one sendmsg each.
//
// Every send is non-blocking (MSG_DONTWAIT): a full socket completes at
// once with -EAGAIN instead of being parked in the kernel, so a pass never
// waits, and the caller falls back to waiting for writability as with
// sendmsg. Loop thread only: the ring is made on the thread that submits
// to it (IORING_SETUP_SINGLE_ISSUER).
#ifndef SKIFF_SERVER_INTERNAL_SEND_RING_H_
#define SKIFF_SERVER_INTERNAL_SEND_RING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <sys/socket.h>

namespace skiff::server::internal {

class SendRing {
 public:
  // Sends per submission; a longer pass is submitted in several.
  static constexpr unsigned kEntries = 256;

  // Null, with *why set, when there is no ring to be had: built without
  // liburing, or the kernel refuses (too old, io_uring disabled by sysctl,
  // or a container's seccomp profile). The caller then uses sendmsg.
  static std::unique_ptr<SendRing> Open(std::string* why);
  ~SendRing();
  SendRing(const SendRing&) = delete;
  SendRing& operator=(const SendRing&) = delete;

  // Sends messages[i] on fds[i] for i < count (at most kEntries), with
  // MSG_DONTWAIT | MSG_NOSIGNAL, and waits for every completion:
  // results[i] is the bytes sent or -errno, as sendmsg would give; adds
  // the system calls it took to *calls (one unless interrupted). False when
  // the ring itself failed: the sends it did not report have -EIO, and the
  // ring must not be used again (the caller drops it for sendmsg).
  bool SendAll(const int* fds, msghdr* messages, int* results, size_t count, uint64_t* calls);

 private:
  // Interrupted or refused-for-now submissions retried before giving up.
  static constexpr int kMaxRetries = 100;

  struct Ring;
  explicit SendRing(std::unique_ptr<Ring> ring);

  std::unique_ptr<Ring> ring_;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_SEND_RING_H_
