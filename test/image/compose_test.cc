// compose/docker-compose.yml, run: PostgreSQL and skiffd start together,
// both health checks pass, the image's CLI adds a user, a client on
// 127.0.0.1 stores and reads a document, and both services stop with status
// 0. With podman, podman-compose runs it through compose/podman-host-network
// (every container on the host's network, listening on 127.0.0.1 only);
// with a Docker engine, `docker compose` runs it as written. The images are
// tools/image's (image_build, with --with-postgres).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client.h"
#include "support/skiffd_process.h"

#include "test/image/image_runner.h"
#include "test/status_matchers.h"

namespace skiff::image_test {
namespace {

// A loopback port nothing listens on, below the ephemeral range so that no
// outgoing connection takes it meanwhile.
uint16_t FreePort(uint16_t from) {
  for (uint16_t port = from; port < 32000; ++port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (free) return port;
  }
  return 0;
}

class ComposeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto image = FindBuiltImage();
    if (!image.ok())
      GTEST_SKIP() << "*** NO CONTAINER IMAGE, compose case NOT run: " << image.status();
    image_ = *image;
    ASSERT_FALSE(image_.postgres_tag.empty())
        << "tools/image --with-postgres made no PostgreSQL image";
    const std::string file = std::string(SKIFF_SOURCE_DIR) + "/compose/docker-compose.yml";
    project_ = "skiff-image-test-" + std::to_string(getpid());
    if (image_.engine == "docker") {
      compose_ = {image_.engine_path, "compose", "-p", project_, "-f", file};
    } else {
      const std::string podman_compose = FindExecutable("podman-compose");
      ASSERT_FALSE(podman_compose.empty()) << "podman-compose is missing (tools/image installs it)";
      compose_ = {podman_compose,
                  "--podman-path",
                  std::string(SKIFF_SOURCE_DIR) + "/compose/podman-host-network",
                  "-p",
                  project_,
                  "-f",
                  file};
      // On the host's network each service listens on the host itself, and
      // skiffd finds PostgreSQL there.
      setenv("SKIFF_LISTEN_ADDRESS", "127.0.0.1", 1);
      setenv("SKIFF_PG_HOST", "127.0.0.1", 1);
    }
    const uint16_t base = static_cast<uint16_t>(20000 + getpid() % 10000);
    skiffd_port_ = FreePort(base);
    pg_port_ = FreePort(static_cast<uint16_t>(skiffd_port_ + 1));
    ASSERT_NE(pg_port_, 0);
    setenv("SKIFF_IMAGE", image_.tag.c_str(), 1);
    setenv("SKIFF_POSTGRES_IMAGE", image_.postgres_tag.c_str(), 1);
    setenv("SKIFF_PORT", std::to_string(skiffd_port_).c_str(), 1);
    setenv("SKIFF_PG_PORT", std::to_string(pg_port_).c_str(), 1);
    started_ = true;
  }

  void TearDown() override {
    if (started_) Compose({"down", "-v"});
  }

  int Compose(const std::vector<std::string>& args) {
    std::vector<std::string> argv = compose_;
    argv.insert(argv.end(), args.begin(), args.end());
    return support::RunCommand(argv);
  }

  // The container of `service` under each tool's naming.
  std::string Container(const std::string& service) const {
    return image_.engine == "docker" ? project_ + "-" + service + "-1"
                                     : project_ + "_" + service + "_1";
  }

  // Whether the health check of `service` passes now. podman runs health
  // checks from systemd timers, which a machine without systemd lacks, so
  // the check is run here; docker runs its own and reports the result.
  bool Healthy(const std::string& service) {
    if (image_.engine == "docker") {
      std::string status;
      support::RunCommand({image_.engine_path, "inspect", "--format", "{{.State.Health.Status}}",
                           Container(service)},
                          &status);
      return status == "healthy";
    }
    std::string ignored;
    return support::RunCommand({image_.engine_path, "healthcheck", "run", Container(service)},
                               &ignored) == 0;
  }

  // Waits (bounded, for a loaded machine: PostgreSQL's first start runs
  // initdb, and skiffd restarts until PostgreSQL is up) until healthy.
  bool WaitHealthy(const std::string& service) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Healthy(service)) return true;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    return false;
  }

  std::string ExitCode(const std::string& service) {
    std::string code;
    support::RunCommand(
        {image_.engine_path, "inspect", "--format", "{{.State.ExitCode}}", Container(service)},
        &code);
    return code;
  }

  BuiltImage image_;
  std::string project_;
  std::vector<std::string> compose_;
  uint16_t skiffd_port_ = 0;
  uint16_t pg_port_ = 0;
  bool started_ = false;
};

TEST_F(ComposeTest, SkiffdOnPostgresServesAndStopsCleanly) {
  ASSERT_EQ(Compose({"up", "-d"}), 0);
  ASSERT_TRUE(WaitHealthy("postgres")) << "PostgreSQL never became healthy";
  ASSERT_TRUE(WaitHealthy("skiffd")) << "skiffd never became healthy";

  // The image's CLI finds the store in the container's SKIFF_STORE.
  std::string secret;
  ASSERT_EQ(support::RunCommand({image_.engine_path, "exec", Container("skiffd"), "skiff", "user",
                                 "add", "compose", "--read", "docs", "--write", "docs"},
                                &secret),
            0);
  ASSERT_FALSE(secret.empty());
  {
    client::ClientOptions options;
    options.port = skiffd_port_;
    options.user = "compose";
    options.secret = secret;
    options.reconnect = false;
    auto client = client::Client::Connect(options);
    ASSERT_OK(client);
    const doc::Value value = {{"stack", "compose"}, {"pg_port", pg_port_}};
    ASSERT_OK((*client)->Set("docs", "stack", value));
    auto read = (*client)->Get("docs", "stack");
    ASSERT_OK(read);
    ASSERT_TRUE(read->has_value());
    EXPECT_EQ(**read, value);
  }

  ASSERT_EQ(Compose({"stop"}), 0);
  EXPECT_EQ(ExitCode("skiffd"), "0");
  EXPECT_EQ(ExitCode("postgres"), "0");
}

}  // namespace
}  // namespace skiff::image_test
