// Settings of skiffd: one table that drives the command-line flags, the
// SKIFF_* environment variables, the TOML config file and --help, so they
// never disagree. Precedence, lowest first: built-in defaults, config file,
// environment, flags.
// Pure functions over a ServerOptions; thread-compatible.
#ifndef SKIFF_CMD_SETTINGS_H_
#define SKIFF_CMD_SETTINGS_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/server_options.h"

namespace skiff::cmd {

// skiffd's settings: the server's, and the process's own.
struct SkiffdOptions : server::ServerOptions {
  // At start, how long to keep trying to reach a PostgreSQL store that does
  // not answer yet (0 = give up at once).
  std::chrono::milliseconds store_wait{std::chrono::seconds(30)};
};

// What the command line asked for besides server options.
struct Invocation {
  bool help = false;
  std::string config_path;  // --config, else $SKIFF_CONFIG; empty = none
};

// Applies one setting by its flag name ("port", "io-threads"). bad_request
// naming `origin` for an unknown name or a value that does not parse.
Status ApplySetting(std::string_view name, std::string_view value, const std::string& origin,
                    SkiffdOptions& options);

// Applies a TOML file whose keys are flag names (port = 7420,
// durability = "memory"). bad_request for a syntax error, an unknown key or
// a bad value; unavailable when the file cannot be read.
Status ApplyConfigFile(const std::string& path, SkiffdOptions& options);

// Applies SKIFF_* variables from `environ`-style "NAME=value" entries.
// bad_request naming the variable when a value does not parse.
Status ApplyEnvironment(const std::vector<std::string>& environment, SkiffdOptions& options);

// Applies "--name value" / "--name=value" flags (--config is recorded in
// the Invocation, not applied). bad_request naming the flag for an unknown
// flag, a missing value or a value that does not parse.
Result<Invocation> ApplyFlags(const std::vector<std::string>& args, SkiffdOptions& options);

// The --help text: every setting, its flag, variable, default and meaning.
std::string HelpText(std::string_view program);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_SETTINGS_H_
