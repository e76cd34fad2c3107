// ChrootRunner: the image's own files, unpacked from it (skopeo copies it to
// an OCI layout, umoci unpacks that into a runtime bundle), run as the
// image would run them: the entrypoint and environment, user and working
// directory of the bundle's config.json, under `unshare --root` with a
// cleared environment. The unpacked /data is the volume, kept for the
// runner's life. Needs root (chroot, setuid). See image_runner.h.
#ifndef SKIFF_TEST_IMAGE_CHROOT_RUNNER_H_
#define SKIFF_TEST_IMAGE_CHROOT_RUNNER_H_

#include <memory>
#include <string>
#include <vector>

#include "support/temp_dir.h"

#include "test/image/image_runner.h"

namespace skiff::image_test {

class ChrootRunner final : public ImageRunner {
 public:
  // Unpacks `image`. unavailable when not root or a tool is missing.
  static Result<std::unique_ptr<ChrootRunner>> Unpack(const BuiltImage& image);

  int RunCli(const std::vector<std::string>& args, std::string* first_line) override;
  Status StartServer(const ServerSpec& spec, support::SkiffdProcess& server) override;
  int RunHealthCheck(uint16_t port) override;

 private:
  ChrootRunner() = default;
  // env -i ENV... unshare --root ... -- PROGRAM ARGS...
  std::vector<std::string> Command(const std::vector<std::string>& program,
                                   const std::vector<std::string>& extra_env) const;

  support::TempDir dir_;  // the OCI layout and the bundle; removed with the runner
  std::string unshare_;
  std::string rootfs_;
  std::vector<std::string> entrypoint_;  // the bundle's process.args
  std::vector<std::string> env_;         // and process.env
  std::string cwd_;
  uint32_t uid_ = 0;
  uint32_t gid_ = 0;
};

}  // namespace skiff::image_test

#endif  // SKIFF_TEST_IMAGE_CHROOT_RUNNER_H_
