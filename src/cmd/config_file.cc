// The TOML config file of skiffd (toml++ from Debian's libtomlplusplus-dev).
// Each key is applied through the settings table's own option, so a value
// in the file is checked exactly as the same value given as a flag. Built
// without toml++, --config reports that instead of guessing.
#include <fstream>
#include <sstream>
#include <string>

#include "cmd/settings.h"

#ifdef SKIFF_HAVE_TOMLPLUSPLUS
#include <toml++/toml.h>
#endif

namespace skiff::cmd {

Status ApplyConfigFile(CLI::App& app, const std::string& path) {
#ifdef SKIFF_HAVE_TOMLPLUSPLUS
  std::ifstream in(path);
  if (!in) return BadRequest("--config: cannot read '" + path + "'");
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
    const std::string name(key.str());
    const std::string origin = path + ": " + name;
    CLI::Option* option = app.get_option_no_throw("--" + name);
    if (option == nullptr || !option->get_configurable()) {
      return BadRequest(path + ": unknown setting '" + name + "'");
    }
    std::string value;
    if (const toml::value<std::string>* text_value = node.as_string()) {
      value = text_value->get();
    } else if (const toml::value<int64_t>* number = node.as_integer()) {
      value = std::to_string(number->get());
    } else if (const toml::value<bool>* flag = node.as_boolean()) {
      value = flag->get() ? "true" : "false";
    } else {
      return BadRequest(origin + ": must be a string, an integer or true/false");
    }
    // A flag or a variable already set it, and they win over the file.
    if (option->count() > 0) continue;
    try {
      option->add_result(value);
      option->run_callback();
    } catch (const CLI::ParseError& e) {
      return BadRequest(path + ": " + e.what());
    }
  }
  return Status::Ok();
#else
  (void)app;
  return BadRequest("config file '" + path +
                    "' given, but this skiffd was built without toml++ (libtomlplusplus-dev)");
#endif
}

}  // namespace skiff::cmd
