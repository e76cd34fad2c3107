// ImageRunner: how the image tests start the programs of skiffd's container
// image (compose/Dockerfile, built by tools/image).
//
// ContainerRunner runs real containers (podman or docker, host network, a
// named volume at /data). ChrootRunner unpacks the image (skopeo, umoci) and
// runs its own files under `unshare --root` with the image's user, working
// directory and environment, which proves the image holds everything its
// binary loads even where no container can start. Each runner removes what
// it created (containers, volume, unpacked tree) when destroyed.
// Not thread-safe: one test uses one runner.
#ifndef SKIFF_TEST_IMAGE_IMAGE_RUNNER_H_
#define SKIFF_TEST_IMAGE_IMAGE_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "support/skiffd_process.h"

namespace skiff::image_test {

// The image tools/image built for this checkout, read from its state
// directory ($SKIFF_IMAGE_STATE).
struct BuiltImage {
  std::string tag;
  std::string engine;           // "podman" or "docker"
  std::string engine_path;      // the engine's executable
  std::string containers_conf;  // podman's CONTAINERS_CONF; empty for docker
  std::string postgres_tag;     // PostgreSQL's image for compose (--with-postgres)
};

// unavailable (with tools/image's reason) when no image was built, which
// is what tools/image reports on a machine where no engine can build one.
Result<BuiltImage> FindBuiltImage();

// How a test starts the image's server.
struct ServerSpec {
  std::vector<std::string> args;  // flags after the image's entrypoint
  std::vector<std::string> env;   // NAME=value set for the server
};

class ImageRunner {
 public:
  virtual ~ImageRunner() = default;

  // Runs the image's skiff CLI with `args` to its end. Its exit status (-1
  // when it could not run) and, when asked, its first line of stdout.
  virtual int RunCli(const std::vector<std::string>& args, std::string* first_line) = 0;

  // Starts the image's entrypoint with `spec`; `server` owns the process, so
  // server.Stop() sends SIGTERM and checks the exit status is 0.
  // unavailable when it does not print its listening line.
  virtual Status StartServer(const ServerSpec& spec, support::SkiffdProcess& server) = 0;

  // Runs the image's health check (`skiff health`) beside the running
  // server, against ws://127.0.0.1:PORT/. Its exit status.
  virtual int RunHealthCheck(uint16_t port) = 0;
};

// The runner of `kind` ("container" or "chroot") for `image`. unavailable
// when this machine cannot run it (the reason says why); other errors are
// failures.
Result<std::unique_ptr<ImageRunner>> NewImageRunner(const std::string& kind,
                                                    const BuiltImage& image);

// Looks `name` up in $PATH; empty when it is not there.
std::string FindExecutable(const std::string& name);

}  // namespace skiff::image_test

#endif  // SKIFF_TEST_IMAGE_IMAGE_RUNNER_H_
