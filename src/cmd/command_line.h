// What the command lines of Skiff's programs share, over CLI11 (Debian's
// libcli11-dev): the usage exit code, boolean flags, whole numbers, and one
// way to turn a parse into "go on", help text or an error.
//
// Each program keeps one table of its options: a function that adds every
// option to a CLI::App with its name, type, default, help and, where it has
// one, its SKIFF_* variable (->envname). Flags, variables and --help all
// come from that table; the functions here only keep the tables alike.
// Functions over the app they are given; thread-compatible.
#ifndef SKIFF_CMD_COMMAND_LINE_H_
#define SKIFF_CMD_COMMAND_LINE_H_

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace skiff::cmd {

// Exit code of a bad flag, value or variable in every program: the suite's
// scheme (docs/benchmarks.md), after BSD's EX_USAGE.
inline constexpr int kUsageExit = 64;

// Sets the conventions every table relies on; call before adding options.
// An option given twice keeps its last value (a flag after a variable or
// an image's default flag wins, as a user expects), and help lines are wide
// enough for the variables' names.
void UseSkiffConventions(CLI::App& app);

// Adds a boolean flag: `--name` alone sets it, `--name=true` and
// `--name=false` say which. Other values (yes, on, 1, which CLI11 alone
// would take) are usage errors, so a flag reads the way its TOML value and
// its variable do.
CLI::Option* AddBoolFlag(CLI::App& app, const std::string& name, bool& target,
                         const std::string& help);

// A transform (->transform, not ->check, which may not change the value):
// checks that a value is a decimal whole number (digits only) and drops its
// leading zeros: CLI11's own conversion reads "010" as octal and "0x10" as
// hex. Add CLI::Range after it for the bounds.
const CLI::Validator& WholeNumber();

// What a successful parse asks the program to do.
struct Parsed {
  enum class Action { kRun, kHelp, kVersion };
  Action action = Action::kRun;
  std::string text;  // for kHelp and kVersion: what to print on stdout
};

// Parses `args` (without the program's name), the variables of the table's
// options included. bad_request with CLI11's message, which names the flag
// or value, for anything the table does not accept.
Result<Parsed> ParseArgs(CLI::App& app, const std::vector<std::string>& args);

// For a program's main: parses `args`, and when the program should not go
// on returns its exit code: 0 after printing help or the version on `out`,
// kUsageExit after printing "PROGRAM: what was wrong" and a hint on `err`.
// Returns -1 when the program should go on.
int ParseOrExitCode(CLI::App& app, const std::vector<std::string>& args, std::ostream& out,
                    std::ostream& err);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_COMMAND_LINE_H_
