#include "support/temp_dir.h"

#include <system_error>

#include <stdlib.h>

#include "base/check.h"

namespace skiff::support {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "skiff-XXXXXX").string();
  SKIFF_CHECK(mkdtemp(pattern.data()) != nullptr);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;  // best effort: a leftover temp dir is not worth a crash
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace skiff::support
