// TempDir: a fresh directory under $TMPDIR (or /tmp), removed with everything
// in it when the object is destroyed. Each instance is owned by one thread.
#ifndef SKIFF_SUPPORT_TEMP_DIR_H_
#define SKIFF_SUPPORT_TEMP_DIR_H_

#include <filesystem>
#include <string>

namespace skiff::support {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // path() / name, as a string.
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_TEMP_DIR_H_
