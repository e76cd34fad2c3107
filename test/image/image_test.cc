// skiffd's container image, run: the image_build test (tools/image) builds
// it first. Each case runs both as containers and, unpacked, under chroot
// (image_runner.h): the image's CLI creates a user, the image's server
// serves a real client on 127.0.0.1, stops on SIGTERM with status 0, starts
// again on the same volume and still has the document, on SQLite in the
// volume and on PostgreSQL. Where no engine could build an image the cases
// are skipped, loudly.
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client.h"
#include "support/postgres.h"
#include "support/process.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"

#include "test/image/container_runner.h"
#include "test/image/image_runner.h"
#include "test/status_matchers.h"

namespace skiff::image_test {
namespace {

std::vector<std::string> Join(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

constexpr const char* kNoImage = "*** NO CONTAINER IMAGE, image cases NOT run: ";

class ImageTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto image = FindBuiltImage();
    if (!image.ok()) GTEST_SKIP() << kNoImage << image.status();
    auto runner = NewImageRunner(GetParam(), *image);
    if (!runner.ok() && runner.status().code() == StatusCode::kUnavailable) {
      GTEST_SKIP() << "*** the " << GetParam()
                   << " runner cannot run here, NOT run: " << runner.status();
    }
    ASSERT_OK(runner);
    runner_ = std::move(*runner);
  }

  // Names unique to this run, so runs sharing a PostgreSQL never meet.
  std::string Unique(const std::string& what) const {
    return "image_" + what + "_" + GetParam() + "_" + std::to_string(getpid());
  }

  Result<std::unique_ptr<client::Client>> Connect(uint16_t port) const {
    client::ClientOptions options;
    options.port = port;
    options.user = user_;
    options.secret = secret_;
    options.reconnect = false;
    return client::Client::Connect(options);
  }

  // The whole life of a document in the image: the CLI adds a user, the
  // server stores a document, stops on SIGTERM, starts again and reads it
  // back. `store` is the flags naming the store (none: the image's own
  // default, SQLite in the volume, for the server and the CLI alike).
  void DocumentSurvivesRestart(const std::vector<std::string>& store) {
    user_ = Unique("user");
    const std::string table = Unique("docs");
    ASSERT_EQ(runner_->RunCli(
                  Join(store, {"user", "add", user_, "--read", table, "--write", table}), &secret_),
              0);
    ASSERT_FALSE(secret_.empty());
    const ServerSpec spec{Join({"--address", "127.0.0.1", "--port", "0"}, store), {}};
    const doc::Value value = {
        {"runner", GetParam()}, {"n", 42}, {"tags", doc::Value::array({"a", "b"})}};

    support::SkiffdProcess server;
    ASSERT_OK(runner_->StartServer(spec, server));
    EXPECT_EQ(runner_->RunHealthCheck(server.port()), 0);
    {
      auto client = Connect(server.port());
      ASSERT_OK(client);
      ASSERT_OK((*client)->Set(table, "doc", value));
      auto read = (*client)->Get(table, "doc");
      ASSERT_OK(read);
      ASSERT_TRUE(read->has_value());
      EXPECT_EQ(**read, value);
    }
    ASSERT_OK(server.Stop());  // SIGTERM; anything but exit status 0 fails

    ASSERT_OK(runner_->StartServer(spec, server));
    {
      auto client = Connect(server.port());
      ASSERT_OK(client);
      auto read = (*client)->Get(table, "doc");
      ASSERT_OK(read);
      ASSERT_TRUE(read->has_value()) << "the document did not survive the restart";
      EXPECT_EQ(**read, value);
      EXPECT_OK((*client)->Delete(table, "doc"));
    }
    ASSERT_OK(server.Stop());
    EXPECT_EQ(runner_->RunCli(Join(store, {"user", "delete", user_}), nullptr), 0);
  }

  std::unique_ptr<ImageRunner> runner_;
  std::string user_;
  std::string secret_;
};

TEST_P(ImageTest, SqliteDocumentSurvivesRestart) { DocumentSurvivesRestart({}); }

TEST_P(ImageTest, PostgresDocumentSurvivesRestart) {
  auto postgres = support::TestPostgres();
  if (!postgres.ok() && !support::InCi()) {
    GTEST_SKIP() << "*** PostgreSQL not available, PostgreSQL image case NOT run: "
                 << postgres.status();
  }
  ASSERT_OK(postgres);
  DocumentSurvivesRestart({"--store", postgres->url});
}

INSTANTIATE_TEST_SUITE_P(Runners, ImageTest, ::testing::Values("container", "chroot"),
                         [](const auto& param_info) { return param_info.param; });

// What only a container engine shows: the image's settings and how a
// mounted config file, the environment and flags combine.
class ContainerImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto image = FindBuiltImage();
    if (!image.ok()) GTEST_SKIP() << kNoImage << image.status();
    auto runner = ContainerRunner::Create(*image);
    ASSERT_OK(runner);
    runner_ = std::move(*runner);
  }

  // The first line the server prints when started with `spec` (and
  // `config_file` over the image's); "" when it printed none.
  std::string ListeningLine(const ServerSpec& spec, const std::string& config_file = "") {
    std::vector<std::string> argv =
        runner_->ServerCommand(runner_->NewContainerName(), spec, config_file);
    support::Process server;
    EXPECT_OK(server.Start(argv));
    Result<std::string> line = server.ReadLine(std::chrono::milliseconds(90000));
    EXPECT_OK(line);
    return line.ok() ? *line : "";
  }

  // `field` of the image's inspect output, as JSON; null when unreadable.
  nlohmann::json Inspect(const std::string& field) {
    std::string json;
    EXPECT_EQ(support::RunCommand({runner_->image().engine_path, "image", "inspect", "--format",
                                   "{{json " + field + "}}", runner_->image().tag},
                                  &json),
              0);
    nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << field << ": " << json;
    return parsed.is_discarded() ? nlohmann::json() : parsed;
  }

  std::unique_ptr<ContainerRunner> runner_;
};

TEST_F(ContainerImageTest, ImageRunsUnprivilegedWithItsDefaultsInAFile) {
  const nlohmann::json config = Inspect(".Config");
  ASSERT_TRUE(config.is_object());
  EXPECT_EQ(config.value("User", ""), "65532:65532");
  EXPECT_EQ(config.value("WorkingDir", ""), "/data");
  // A SKIFF_* variable in the image would override a mounted config file.
  for (const auto& entry : config.value("Env", std::vector<std::string>())) {
    EXPECT_NE(entry.rfind("SKIFF_", 0), 0u) << entry;
  }
  EXPECT_EQ(
      config.value("Entrypoint", std::vector<std::string>()),
      (std::vector<std::string>{"/usr/local/bin/skiffd", "--config", "/etc/skiff/skiffd.toml"}));
  // podman keeps the health check beside the OCI config, docker inside it.
  const nlohmann::json health =
      Inspect(runner_->image().engine == "docker" ? ".Config.Healthcheck" : ".HealthCheck");
  ASSERT_TRUE(health.is_object());
  const auto test = health.value("Test", std::vector<std::string>());
  ASSERT_GE(test.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(test.begin(), test.begin() + 3),
            (std::vector<std::string>{"CMD", "/usr/local/bin/skiff", "health"}));
}

TEST_F(ContainerImageTest, MountedConfigFileReplacesTheImagesDefaults) {
  support::TempDir dir;
  const std::string config = dir.File("skiffd.toml");
  std::ofstream(config) << "address = \"127.0.0.1\"\nport = 0\nstore = \"memory:\"\n";
  ASSERT_EQ(chmod(config.c_str(), 0644), 0);
  const std::string line = ListeningLine({}, config);
  EXPECT_EQ(line.rfind("skiffd listening on 127.0.0.1:", 0), 0u) << line;
  EXPECT_NE(line.find(" store=memory "), std::string::npos) << line;
}

TEST_F(ContainerImageTest, EnvironmentOverridesTheFileAndFlagsOverrideBoth) {
  const std::vector<std::string> local = {"--address", "127.0.0.1", "--port", "0"};
  const std::string from_env = ListeningLine({local, {"SKIFF_STORE=memory:"}});
  EXPECT_NE(from_env.find(" store=memory "), std::string::npos) << from_env;
  const std::string from_flag =
      ListeningLine({Join(local, {"--store", "sqlite:/data/flag.db"}), {"SKIFF_STORE=memory:"}});
  EXPECT_NE(from_flag.find(" store=sqlite "), std::string::npos) << from_flag;
}

}  // namespace
}  // namespace skiff::image_test
