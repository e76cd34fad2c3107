// The listener reports through the logger it is given, never on stderr.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/logger.h"
#include "server/internal/listener.h"

#include "test/status_matchers.h"

namespace skiff::server::internal {
namespace {

class IgnoringHandler final : public ListenerHandler {
 public:
  void OnText(const std::shared_ptr<Connection>&, std::string_view) override {}
  void OnBinary(const std::shared_ptr<Connection>&) override {}
  void OnClose(const std::shared_ptr<Connection>&) override {}
};

TEST(ListenerLogTest, AConnectionLimitPastTheDescriptorLimitIsAWarning) {
  SystemClock clock;
  CapturingLogger logger;
  IgnoringHandler handler;
  ListenerOptions options;
  options.port = 0;
  // More than any descriptor limit (an unlimited one counts as 2^20).
  options.max_connections = size_t{1} << 40;
  auto listener = Listener::Start(options, handler, clock, logger);
  ASSERT_OK(listener);
  EXPECT_LT((*listener)->stats().max_connections, options.max_connections);
  (*listener)->Shutdown(std::chrono::milliseconds(0));

  const std::vector<CapturingLogger::Event> events = logger.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].level, LogLevel::kWarning);
  EXPECT_EQ(events[0].component, "listener");
  const std::string line = logger.lines()[0];
  EXPECT_EQ(line.rfind("skiffd: warning: listener: max-connections 1099511627776 does not fit", 0),
            0u)
      << line;
}

TEST(ListenerLogTest, AFittingConnectionLimitSaysNothing) {
  SystemClock clock;
  CapturingLogger logger;
  IgnoringHandler handler;
  ListenerOptions options;
  options.port = 0;
  options.max_connections = 8;
  auto listener = Listener::Start(options, handler, clock, logger);
  ASSERT_OK(listener);
  EXPECT_EQ((*listener)->stats().max_connections, 8u);
  (*listener)->Shutdown(std::chrono::milliseconds(0));
  EXPECT_TRUE(logger.events().empty());
}

}  // namespace
}  // namespace skiff::server::internal
