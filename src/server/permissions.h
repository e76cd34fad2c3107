// Permissions: which tables a user may read and which they may write.
//
// Each list holds table names or "*" (every table). Reading (get, has, all)
// needs the table in `read`; writing (set, delete, add, merge) needs it in
// `write`. Writing does not imply reading. System tables (names starting with
// '$') are never reachable through the protocol, whatever the lists say.
// A plain value; thread-compatible.
#ifndef SKIFF_SERVER_PERMISSIONS_H_
#define SKIFF_SERVER_PERMISSIONS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace skiff::server {

inline constexpr std::string_view kAllTables = "*";

class Permissions {
 public:
  Permissions() = default;
  Permissions(std::vector<std::string> read, std::vector<std::string> write)
      : read_(std::move(read)), write_(std::move(write)) {}

  bool CanRead(std::string_view table) const { return Allows(read_, table); }
  bool CanWrite(std::string_view table) const { return Allows(write_, table); }

  const std::vector<std::string>& read() const { return read_; }
  const std::vector<std::string>& write() const { return write_; }

  friend bool operator==(const Permissions&, const Permissions&) = default;

 private:
  static bool Allows(const std::vector<std::string>& list, std::string_view table);

  std::vector<std::string> read_;
  std::vector<std::string> write_;
};

// Parses "t1,t2" or "*" (empty text is the empty list). bad_request naming the
// entry when one is neither "*" nor a valid table name.
Result<std::vector<std::string>> ParseTableList(std::string_view text);

}  // namespace skiff::server

#endif  // SKIFF_SERVER_PERMISSIONS_H_
