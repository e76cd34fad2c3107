#include "store/internal/lock_file.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace skiff::store::internal {
namespace {

// The pid the holder wrote, or "" when the file says nothing usable.
std::string HolderOf(int fd) {
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string text(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return "";
  return text;
}

}  // namespace

Result<std::unique_ptr<LockFile>> LockFile::Acquire(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Unavailable("cannot create lock file '" + path + "': " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = HolderOf(fd);
    close(fd);
    if (error != EWOULDBLOCK) {
      return Unavailable("cannot lock '" + path + "': " + std::strerror(error));
    }
    return Unavailable("'" + path + "' is locked by " +
                       (holder.empty() ? std::string("another process") : "process " + holder));
  }
  // Ours now: say who holds it. A failure here only loses the pid in a
  // message, not the lock.
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
  return std::unique_ptr<LockFile>(new LockFile(fd));
}

LockFile::~LockFile() {
  // Closing the last descriptor of the open file releases the flock.
  close(fd_);
}

}  // namespace skiff::store::internal
