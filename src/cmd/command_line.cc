#include "cmd/command_line.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace skiff::cmd {
namespace {

// CLI11's message names the flag ("--port: ..."); when the value came from
// the flag's variable instead, say so, or the user looks for a flag they
// never typed.
std::string NameTheVariable(const CLI::App& app, const std::vector<std::string>& args,
                            std::string message) {
  for (const CLI::Option* option : app.get_options()) {
    const std::string& env = option->get_envname();
    const std::string flag = option->get_name();
    if (env.empty() || std::getenv(env.c_str()) == nullptr) continue;
    if (message.rfind(flag + ":", 0) != 0) continue;
    bool typed = false;
    for (const std::string& arg : args) typed |= arg == flag || arg.rfind(flag + "=", 0) == 0;
    if (!typed) message += " (from " + env + ")";
    break;
  }
  return message;
}

}  // namespace

void UseSkiffConventions(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(40);
}

CLI::Option* AddBoolFlag(CLI::App& app, const std::string& name, bool& target,
                         const std::string& help) {
  return app.add_flag(name, target, help)
      ->check(CLI::IsMember({"true", "false"}).description(""))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->type_name("[=true|false]")
      ->default_str(target ? "true" : "false");
}

const CLI::Validator& WholeNumber() {
  static const auto* validator = new CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
          return "'" + text + "' is not a whole number";
        }
        // Leading zeros go: CLI11 would read what follows as octal.
        text.erase(0, std::min(text.find_first_not_of('0'), text.size() - 1));
        return "";
      },
      "", "WholeNumber");
  return *validator;
}

Result<Parsed> ParseArgs(CLI::App& app, const std::vector<std::string>& args) {
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  Parsed parsed;
  try {
    app.parse(std::move(reversed));
  } catch (const CLI::CallForHelp&) {
    // help() shows the subcommand that was asked about, if one was.
    parsed.action = Parsed::Action::kHelp;
    parsed.text = app.help();
  } catch (const CLI::CallForAllHelp&) {
    parsed.action = Parsed::Action::kHelp;
    parsed.text = app.help("", CLI::AppFormatMode::All);
  } catch (const CLI::CallForVersion& e) {
    parsed.action = Parsed::Action::kVersion;
    parsed.text = std::string(e.what()) + "\n";
  } catch (const CLI::ParseError& e) {
    return BadRequest(NameTheVariable(app, args, e.what()));
  }
  return parsed;
}

int ParseOrExitCode(CLI::App& app, const std::vector<std::string>& args, std::ostream& out,
                    std::ostream& err) {
  Result<Parsed> parsed = ParseArgs(app, args);
  if (!parsed.ok()) {
    err << app.get_name() << ": " << parsed.status().message() << "\n"
        << "Try " << app.get_name() << " --help.\n";
    return kUsageExit;
  }
  if (parsed->action == Parsed::Action::kRun) return -1;
  out << parsed->text;
  return 0;
}

}  // namespace skiff::cmd
