// The TOML config file of skiffd (toml++ from Debian's libtomlplusplus-dev).
// Built without toml++, --config reports that instead of guessing.
#include <fstream>
#include <sstream>
#include <string>

#include "cmd/settings.h"

#ifdef SKIFF_HAVE_TOMLPLUSPLUS
#include <toml++/toml.h>
#endif

namespace skiff::cmd {

Status ApplyConfigFile(const std::string& path, SkiffdOptions& options) {
#ifdef SKIFF_HAVE_TOMLPLUSPLUS
  std::ifstream in(path);
  if (!in) return Unavailable("cannot read config file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  toml::table table;
  try {
    // toml++ reports syntax errors by exception; it ends here.
    table = toml::parse(text.str(), path);
  } catch (const toml::parse_error& e) {
    return BadRequest(path + ":" + std::to_string(e.source().begin.line) + ": " +
                      std::string(e.description()));
  }
  for (auto&& [key, node] : table) {
    std::string origin = path + ": " + std::string(key.str());
    std::string value;
    if (const toml::value<std::string>* text_value = node.as_string()) {
      value = text_value->get();
    } else if (const toml::value<int64_t>* number = node.as_integer()) {
      value = std::to_string(number->get());
    } else {
      return BadRequest(origin + ": must be a string or an integer");
    }
    SKIFF_RETURN_IF_ERROR(ApplySetting(key.str(), value, origin, options));
  }
  return Status::Ok();
#else
  (void)options;
  return BadRequest("config file '" + path +
                    "' given, but this skiffd was built without toml++ (libtomlplusplus-dev)");
#endif
}

}  // namespace skiff::cmd
