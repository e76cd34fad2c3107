#include "test/image/image_runner.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "test/image/chroot_runner.h"
#include "test/image/container_runner.h"

namespace skiff::image_test {
namespace {

// The first line of `path`; empty when it cannot be read.
std::string ReadLine(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string FindExecutable(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/" + name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Result<BuiltImage> FindBuiltImage() {
  const char* state = std::getenv("SKIFF_IMAGE_STATE");
  if (state == nullptr || *state == '\0') {
    return Unavailable("SKIFF_IMAGE_STATE is not set (ctest sets it; see test/image)");
  }
  const std::filesystem::path dir(state);
  BuiltImage image;
  image.engine = ReadLine(dir / "engine");
  image.tag = ReadLine(dir / "image");
  image.postgres_tag = ReadLine(dir / "postgres-image");
  if (image.engine.empty() || image.tag.empty()) {
    return Unavailable("tools/image built no image (it said why in the image_build test)");
  }
  image.engine_path = FindExecutable(image.engine);
  if (image.engine_path.empty()) return Internal(image.engine + " built the image but is gone");
  if (image.engine == "podman") {
    image.containers_conf = (dir / "containers.conf").string();
    // Every podman the tests start reads the settings tools/image wrote.
    setenv("CONTAINERS_CONF", image.containers_conf.c_str(), 1);
  }
  return image;
}

Result<std::unique_ptr<ImageRunner>> NewImageRunner(const std::string& kind,
                                                    const BuiltImage& image) {
  if (kind == "container") {
    auto runner = ContainerRunner::Create(image);
    if (!runner.ok()) return runner.status();
    return std::unique_ptr<ImageRunner>(std::move(*runner));
  }
  if (kind == "chroot") {
    auto runner = ChrootRunner::Unpack(image);
    if (!runner.ok()) return runner.status();
    return std::unique_ptr<ImageRunner>(std::move(*runner));
  }
  return BadRequest("no image runner '" + kind + "'");
}

}  // namespace skiff::image_test
