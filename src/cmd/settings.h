// Settings of skiffd: one table (AddSkiffdSettings) that gives each setting
// its flag, type, default, help, SKIFF_* variable and TOML key (the flag's
// name without the dashes), so flags, variables, the config file and --help
// never disagree. Precedence, lowest first: built-in defaults, config file,
// environment, flags (docs/deploy.md).
// Functions over the options and app they are given; thread-compatible.
#ifndef SKIFF_CMD_SETTINGS_H_
#define SKIFF_CMD_SETTINGS_H_

#include <chrono>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "server/server_options.h"

namespace skiff::cmd {

// skiffd's settings: the server's, and the process's own.
struct SkiffdOptions : server::ServerOptions {
  // At start, how long to keep trying to reach a PostgreSQL store that does
  // not answer yet (0 = give up at once).
  std::chrono::milliseconds store_wait{std::chrono::seconds(30)};
};

// Adds every setting to `app`, bound to `options` (whose current values are
// the defaults shown), and --config (SKIFF_CONFIG), bound to `config_path`.
void AddSkiffdSettings(CLI::App& app, SkiffdOptions& options, std::string& config_path);

// What the command line asked for.
struct Invocation {
  bool help = false;
  std::string help_text;  // when help: what to print
};

// Reads skiffd's settings into `options`: `args` (without the program's
// name), the process's SKIFF_* variables and the TOML file named by
// --config, else $SKIFF_CONFIG. bad_request, with a message naming the flag,
// variable or file and key, for an unknown flag or key, a value that does
// not parse and a config file that cannot be read.
Result<Invocation> ParseSkiffdCommandLine(const std::vector<std::string>& args,
                                          SkiffdOptions& options);

// Applies a TOML file whose keys are the settings' flag names (port = 7420,
// durability = "memory", cluster = true) to the settings of `app` that no
// flag or variable set. bad_request for a file that cannot be read, a
// syntax error, an unknown key or a bad value (config_file.cc).
Status ApplyConfigFile(CLI::App& app, const std::string& path);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_SETTINGS_H_
