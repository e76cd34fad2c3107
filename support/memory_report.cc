#include "support/memory_report.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

namespace skiff::support {

MemoryReport::MemoryReport(std::string path)
    : path_(path.empty() ? DefaultMemoryJsonPath() : std::move(path)),
      json_(nlohmann::json::object()) {}

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
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string flag = "--benchmark_out=";
  size_t start = 0;
  while (start < cmdline.size()) {
    size_t end = cmdline.find('\0', start);
    if (end == std::string::npos) end = cmdline.size();
    const std::string arg = cmdline.substr(start, end - start);
    if (arg.rfind(flag, 0) == 0) {
      const std::filesystem::path out(arg.substr(flag.size()));
      return (out.parent_path() / "memory.json").string();
    }
    start = end + 1;
  }
  return "memory.json";
}

}  // namespace skiff::support
