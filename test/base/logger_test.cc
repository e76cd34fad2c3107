#include "base/logger.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace skiff {
namespace {

TEST(LoggerTest, LinesHaveAStablePrefix) {
  EXPECT_EQ(FormatLogLine("skiffd", LogLevel::kWarning, "sync", "polling"),
            "skiffd: warning: sync: polling");
  EXPECT_EQ(FormatLogLine("skiffd", LogLevel::kError, "listener", "x"),
            "skiffd: error: listener: x");
  EXPECT_EQ(FormatLogLine("skiff", LogLevel::kInfo, "cluster", "y"), "skiff: info: cluster: y");
}

TEST(LoggerTest, CapturingLoggerKeepsEveryEventInOrder) {
  CapturingLogger logger;
  Logf(logger, LogLevel::kError, "sync", "commit of %zu pushes failed: %s", size_t{3}, "disk full");
  logger.Log(LogLevel::kInfo, "sync", "listening again");
  const std::vector<CapturingLogger::Event> events = logger.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].level, LogLevel::kError);
  EXPECT_EQ(events[0].component, "sync");
  EXPECT_EQ(events[0].message, "commit of 3 pushes failed: disk full");
  EXPECT_EQ(logger.lines(),
            (std::vector<std::string>{"skiffd: error: sync: commit of 3 pushes failed: disk full",
                                      "skiffd: info: sync: listening again"}));
}

TEST(LoggerTest, LogfFormatsMessagesLongerThanItsBuffer) {
  CapturingLogger logger;
  const std::string long_text(5000, 'x');
  Logf(logger, LogLevel::kWarning, "io", "<%s>", long_text.c_str());
  ASSERT_EQ(logger.events().size(), 1u);
  EXPECT_EQ(logger.events()[0].message, "<" + long_text + ">");
}

TEST(LoggerTest, StderrLoggerWritesOneLinePerEvent) {
  StderrLogger logger("skiffd");
  ::testing::internal::CaptureStderr();
  logger.Log(LogLevel::kWarning, "listener", "out of descriptors");
  logger.Log(LogLevel::kInfo, "sync", "back");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "skiffd: warning: listener: out of descriptors\nskiffd: info: sync: back\n");
}

}  // namespace
}  // namespace skiff
