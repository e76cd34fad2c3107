// MemoryReport: the memory family's results as one JSON file (memory.json),
// for the results page, next to the family's Google Benchmark JSON.
//
// Each case sets its own section; every Set() rewrites the whole file, so a
// run cut short still leaves what it measured so far. The file names the run
// (run_id, as the JSON context's skiff_run_id) so that a memory.json left
// from another run is never shown as this one's.
// Thread-safe: sections are guarded by a mutex.
#ifndef SKIFF_SUPPORT_MEMORY_REPORT_H_
#define SKIFF_SUPPORT_MEMORY_REPORT_H_

#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace skiff::support {

class MemoryReport {
 public:
  // Writes to `path`; an empty path picks DefaultMemoryJsonPath().
  explicit MemoryReport(std::string path = "");

  // Replaces `json[section][name]` (or `json[section]` when name is empty) and
  // rewrites the file. internal when the file cannot be written.
  Status Set(const std::string& section, const std::string& name, nlohmann::json value);

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  std::mutex mu_;
  nlohmann::json json_;  // guarded by mu_
};

// Where memory.json goes: $SKIFF_MEMORY_JSON when set; else the directory of
// this process's --benchmark_out file; else the current directory.
std::string DefaultMemoryJsonPath();

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_MEMORY_REPORT_H_
