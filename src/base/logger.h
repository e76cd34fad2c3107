// Logger: where library code reports what an operator should hear about (a
// failing store, a configuration that does not fit, a lost link).
//
// Passed in like the Clock (leveldb's Logger in env.h): library code never
// writes to stderr itself, so a program chooses where the lines go and a
// test captures them. One Log call is one event, written as one line
// "<program>: <level>: <component>: <message>", a prefix operators and
// scripts can rely on. Every Logger here is thread-safe.
#ifndef SKIFF_BASE_LOGGER_H_
#define SKIFF_BASE_LOGGER_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"

namespace skiff {

enum class LogLevel {
  kError,    // something failed that the operator must act on or know of
  kWarning,  // the server goes on, but not as configured or not at full strength
  kInfo,     // a state change worth a line (recovered, connected)
};

// "error", "warning" or "info".
std::string_view LogLevelName(LogLevel level);

class Logger {
 public:
  virtual ~Logger() = default;
  // One event. `component` names the piece that speaks ("sync",
  // "listener"); `message` is one line without its newline.
  virtual void Log(LogLevel level, std::string_view component, std::string_view message) = 0;
};

// Formats `format` as printf does and logs the result.
void Logf(Logger& logger, LogLevel level, std::string_view component, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

// "<program>: <level>: <component>: <message>", without a newline.
std::string FormatLogLine(std::string_view program, LogLevel level, std::string_view component,
                          std::string_view message);

// Writes each event to stderr as one line, in one write, so lines of
// different threads never interleave.
class StderrLogger final : public Logger {
 public:
  explicit StderrLogger(std::string program) : program_(std::move(program)) {}
  void Log(LogLevel level, std::string_view component, std::string_view message) override;

 private:
  const std::string program_;
};

// Keeps every event, for tests to read back.
class CapturingLogger final : public Logger {
 public:
  struct Event {
    LogLevel level;
    std::string component;
    std::string message;
  };

  explicit CapturingLogger(std::string program = "skiffd") : program_(std::move(program)) {}
  void Log(LogLevel level, std::string_view component, std::string_view message) override;

  std::vector<Event> events() const;
  // The events as StderrLogger would write them (without newlines).
  std::vector<std::string> lines() const;

 private:
  const std::string program_;
  mutable Mutex mu_;
  std::vector<Event> events_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace skiff

#endif  // SKIFF_BASE_LOGGER_H_
