// The Stack starts the skiffd it is given (StackOptions::skiffd, the
// suite's --skiffd): two builds can then run side by side in one family.
// It once started the suite's own build whatever it was given, silently.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/stack.h"
#include "support/temp_dir.h"

#include "test/status_matchers.h"

namespace skiff::bench {
namespace {

// A script that leaves a mark, then runs the real skiffd with its flags.
std::string MarkingSkiffd(const support::TempDir& dir, const std::string& mark) {
  const std::string path = dir.File("skiffd-wrapper.sh");
  std::ofstream(path) << "#!/bin/sh\n"
                      << "echo \"$@\" > '" << mark << "'\n"
                      << "exec '" << SKIFFD_PATH << "' \"$@\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

TEST(StackChildTest, RunsTheSkiffdItIsGivenWithItsFlags) {
  support::TempDir dir;
  const std::string mark = dir.File("started");
  StackOptions options;
  options.store = "sqlite";
  options.server = "child";
  options.skiffd = MarkingSkiffd(dir, mark);
  options.child_flags = {"--pack-after-s=7"};
  Result<std::unique_ptr<Stack>> stack = Stack::Start(options);
  ASSERT_OK(stack);
  std::string flags;
  std::getline(std::ifstream(mark), flags);
  EXPECT_NE(flags.find("--pack-after-s=7"), std::string::npos) << flags;
  auto driver = (*stack)->Connect(1, 1, std::chrono::seconds(10));
  ASSERT_OK(driver);
  Result<std::string> pong = (*driver)->Call(R"("op":"ping")");
  ASSERT_OK(pong);
  EXPECT_NE(pong->find("\"ok\":true"), std::string::npos) << *pong;
}

TEST(StackChildTest, AMissingSkiffdFailsTheStartSayingSo) {
  support::TempDir dir;
  StackOptions options;
  options.store = "sqlite";
  options.server = "child";
  options.skiffd = dir.File("no-such-skiffd");
  Result<std::unique_ptr<Stack>> stack = Stack::Start(options);
  ASSERT_FALSE(stack.ok());
  EXPECT_NE(stack.status().message().find(options.skiffd), std::string::npos)
      << stack.status().ToString();
}

}  // namespace
}  // namespace skiff::bench
