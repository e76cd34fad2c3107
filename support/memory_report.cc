#include "support/memory_report.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>

#include "support/suite_options.h"

namespace skiff::support {

MemoryReport::MemoryReport(std::string path)
    : path_(path.empty() ? DefaultMemoryJsonPath() : std::move(path)),
      json_(nlohmann::json::object()) {
  // The results page shows memory.json only beside the run that wrote it.
  json_["run_id"] = bench::GetSuiteOptions().run_id;
  json_["format"] = "skiff-memory/1";
}

Status MemoryReport::Set(const std::string& section, const std::string& name,
                         nlohmann::json value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (name.empty()) {
    json_[section] = std::move(value);
  } else {
    json_[section][name] = std::move(value);
  }
  // Written beside and renamed over, so a reader never sees half a file.
  const std::string temp = path_ + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << json_.dump(1) << '\n';
    if (!out) return Internal("cannot write " + temp);
  }
  std::error_code ec;
  std::filesystem::rename(temp, path_, ec);
  if (ec) return Internal("cannot rename " + temp + ": " + ec.message());
  return Status::Ok();
}

std::string DefaultMemoryJsonPath() {
  if (const char* env = std::getenv("SKIFF_MEMORY_JSON"); env != nullptr && *env != '\0') {
    return env;
  }
  const std::string& out = bench::GetSuiteOptions().json_out;
  if (out.empty()) return "memory.json";
  return (std::filesystem::path(out).parent_path() / "memory.json").string();
}

}  // namespace skiff::support
