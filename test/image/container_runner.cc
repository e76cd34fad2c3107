#include "test/image/container_runner.h"

#include <unistd.h>

namespace skiff::image_test {
namespace {

// Long enough for a loaded machine to create and start a container.
constexpr std::chrono::seconds kStartTimeout{90};

std::string Unique(const std::string& what) {
  static int counter = 0;
  return "skiff-image-test-" + what + "-" + std::to_string(getpid()) + "-" +
         std::to_string(++counter);
}

}  // namespace

Result<std::unique_ptr<ContainerRunner>> ContainerRunner::Create(const BuiltImage& image) {
  std::string volume = Unique("data");
  if (support::RunCommand({image.engine_path, "volume", "create", volume}) != 0) {
    return Unavailable(image.engine + " cannot create a volume");
  }
  return std::unique_ptr<ContainerRunner>(new ContainerRunner(image, std::move(volume)));
}

ContainerRunner::ContainerRunner(BuiltImage image, std::string volume)
    : image_(std::move(image)), volume_(std::move(volume)) {}

ContainerRunner::~ContainerRunner() {
  for (const std::string& container : containers_) Remove(container);
  support::RunCommand({image_.engine_path, "volume", "rm", "-f", volume_});
}

void ContainerRunner::Remove(const std::string& container) {
  // A stopped server removed itself (--rm); this catches one that did not.
  std::string ignored;
  support::RunCommand({image_.engine_path, "rm", "-f", container}, &ignored);
}

std::string ContainerRunner::NewContainerName() {
  containers_.push_back(Unique("server"));
  return containers_.back();
}

int ContainerRunner::RunCli(const std::vector<std::string>& args, std::string* first_line) {
  std::vector<std::string> argv = {image_.engine_path, "run",          "--rm",
                                   "--network",        "host",         "-v",
                                   volume_ + ":/data", "--entrypoint", "/usr/local/bin/skiff",
                                   image_.tag};
  argv.insert(argv.end(), args.begin(), args.end());
  return support::RunCommand(argv, first_line);
}

std::vector<std::string> ContainerRunner::ServerCommand(const std::string& name,
                                                        const ServerSpec& spec,
                                                        const std::string& config_file) const {
  // Attached, so the engine passes SIGTERM on to the server and exits with
  // the server's status.
  std::vector<std::string> argv = {image_.engine_path, "run",  "--rm", "--name",          name,
                                   "--network",        "host", "-v",   volume_ + ":/data"};
  for (const std::string& e : spec.env) argv.insert(argv.end(), {"-e", e});
  if (!config_file.empty()) {
    argv.insert(argv.end(), {"-v", config_file + ":/etc/skiff/skiffd.toml:ro"});
  }
  argv.push_back(image_.tag);
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  return argv;
}

Status ContainerRunner::StartServer(const ServerSpec& spec, support::SkiffdProcess& server) {
  serving_ = NewContainerName();
  std::vector<std::string> argv = ServerCommand(serving_, spec);
  const std::string engine = argv.front();
  argv.erase(argv.begin());
  return server.Start(engine, argv, kStartTimeout);
}

int ContainerRunner::RunHealthCheck(uint16_t port) {
  return support::RunCommand({image_.engine_path, "exec", serving_, "/usr/local/bin/skiff",
                              "health", "--url", "ws://127.0.0.1:" + std::to_string(port) + "/"});
}

}  // namespace skiff::image_test
