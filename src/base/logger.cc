#include "base/logger.h"

#include <cstdarg>
#include <cstdio>

namespace skiff {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kInfo:
      return "info";
  }
  return "unknown";
}

void Logf(Logger& logger, LogLevel level, std::string_view component, const char* format, ...) {
  // Most events fit; a longer one is formatted again into a buffer of its size.
  char small[512];
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(small, sizeof small, format, args);
  va_end(args);
  if (n < 0) {
    va_end(again);
    logger.Log(level, component, format);  // unformattable: say at least what was meant
    return;
  }
  if (static_cast<size_t>(n) < sizeof small) {
    va_end(again);
    logger.Log(level, component, std::string_view(small, static_cast<size_t>(n)));
    return;
  }
  std::string large(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(large.data(), large.size(), format, again);
  va_end(again);
  large.resize(static_cast<size_t>(n));
  logger.Log(level, component, large);
}

std::string FormatLogLine(std::string_view program, LogLevel level, std::string_view component,
                          std::string_view message) {
  std::string line;
  const std::string_view level_name = LogLevelName(level);
  line.reserve(program.size() + level_name.size() + component.size() + message.size() + 6);
  line.append(program).append(": ").append(level_name).append(": ");
  line.append(component).append(": ").append(message);
  return line;
}

void StderrLogger::Log(LogLevel level, std::string_view component, std::string_view message) {
  std::string line = FormatLogLine(program_, level, component, message);
  line += '\n';
  // stdio locks the stream for the call: one call is one unbroken line.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void CapturingLogger::Log(LogLevel level, std::string_view component, std::string_view message) {
  MutexLock lock(&mu_);
  events_.push_back({level, std::string(component), std::string(message)});
}

std::vector<CapturingLogger::Event> CapturingLogger::events() const {
  MutexLock lock(&mu_);
  return events_;
}

std::vector<std::string> CapturingLogger::lines() const {
  std::vector<std::string> out;
  for (const Event& e : events())
    out.push_back(FormatLogLine(program_, e.level, e.component, e.message));
  return out;
}

}  // namespace skiff
