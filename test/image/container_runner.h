// ContainerRunner: the image run as containers by podman or docker, on the
// host's network (podman's bridge networks are not used), with one named
// volume at /data for the runner's life. See image_runner.h.
#ifndef SKIFF_TEST_IMAGE_CONTAINER_RUNNER_H_
#define SKIFF_TEST_IMAGE_CONTAINER_RUNNER_H_

#include <memory>
#include <string>
#include <vector>

#include "test/image/image_runner.h"

namespace skiff::image_test {

class ContainerRunner final : public ImageRunner {
 public:
  // Creates the runner's volume. unavailable when the engine cannot.
  static Result<std::unique_ptr<ContainerRunner>> Create(const BuiltImage& image);
  ~ContainerRunner() override;  // removes its containers and its volume

  int RunCli(const std::vector<std::string>& args, std::string* first_line) override;
  Status StartServer(const ServerSpec& spec, support::SkiffdProcess& server) override;
  int RunHealthCheck(uint16_t port) override;

  // The `run` command line of a server container named `name` with `spec`
  // and, when `config_file` is set, that host file mounted read-only over
  // the image's /etc/skiff/skiffd.toml.
  std::vector<std::string> ServerCommand(const std::string& name, const ServerSpec& spec,
                                         const std::string& config_file = "") const;
  // A container name no other run on this machine uses; Remove()d by the
  // destructor.
  std::string NewContainerName();
  const BuiltImage& image() const { return image_; }

 private:
  ContainerRunner(BuiltImage image, std::string volume);
  void Remove(const std::string& container);

  BuiltImage image_;
  std::string volume_;
  std::vector<std::string> containers_;
  std::string serving_;  // the container StartServer started last
};

}  // namespace skiff::image_test

#endif  // SKIFF_TEST_IMAGE_CONTAINER_RUNNER_H_
