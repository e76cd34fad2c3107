// LockFile: an exclusive lock on a file beside a database, held for as long
// as the object lives, so that a second server cannot open the same SQLite
// file and serve values the first one has changed since.
//
// The lock is flock(2), which belongs to the open file description: it
// conflicts with a second open in the same process as well as in another
// one, it goes with the process when it dies (kill -9 included), and
// closing some other descriptor of the file does not drop it (POSIX record
// locks would). The holder writes its pid into the file so the loser can
// say who has it. The file itself is left behind on close; removing it
// would let a third opener lock a new file while a second still waits on
// the old one.
//
// Thread-compatible: one owner.
#ifndef SKIFF_STORE_INTERNAL_LOCK_FILE_H_
#define SKIFF_STORE_INTERNAL_LOCK_FILE_H_

#include <memory>
#include <string>

#include "base/status.h"

namespace skiff::store::internal {

class LockFile {
 public:
  // Creates `path` when missing and locks it without waiting. unavailable
  // naming the holder's pid when another holds it, or when the file cannot
  // be created.
  static Result<std::unique_ptr<LockFile>> Acquire(const std::string& path);
  ~LockFile();  // releases the lock
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  explicit LockFile(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_LOCK_FILE_H_
