#include "test/image/chroot_runner.h"

#include <fstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

namespace skiff::image_test {
namespace {

constexpr std::chrono::seconds kStartTimeout{60};

}  // namespace

Result<std::unique_ptr<ChrootRunner>> ChrootRunner::Unpack(const BuiltImage& image) {
  if (geteuid() != 0) return Unavailable("running the image under chroot needs root");
  std::unique_ptr<ChrootRunner> runner(new ChrootRunner());
  runner->unshare_ = FindExecutable("unshare");
  const std::string skopeo = FindExecutable("skopeo");
  const std::string umoci = FindExecutable("umoci");
  if (runner->unshare_.empty() || skopeo.empty() || umoci.empty()) {
    return Unavailable("unshare, skopeo or umoci is missing (tools/image installs them)");
  }
  const std::string layout = runner->dir_.File("oci");
  const std::string bundle = runner->dir_.File("bundle");
  const std::string source =
      (image.engine == "docker" ? "docker-daemon:" : "containers-storage:") + image.tag;
  if (support::RunCommand({skopeo, "copy", "--quiet", source, "oci:" + layout + ":image"}) != 0) {
    return Internal("skopeo could not copy " + source + " to an OCI layout");
  }
  if (support::RunCommand({umoci, "unpack", "--image", layout + ":image", bundle}) != 0) {
    return Internal("umoci could not unpack " + layout);
  }
  std::ifstream in(bundle + "/config.json");
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* process =
      config.is_object() && config.contains("process") ? &config["process"] : nullptr;
  if (process == nullptr || !(*process)["args"].is_array()) {
    return Internal("the unpacked bundle has no process in config.json");
  }
  runner->rootfs_ = bundle + "/rootfs";
  runner->entrypoint_ = (*process)["args"].get<std::vector<std::string>>();
  runner->env_ = process->value("env", std::vector<std::string>());
  runner->cwd_ = process->value("cwd", std::string("/"));
  runner->uid_ = (*process)["user"].value("uid", 0u);
  runner->gid_ = (*process)["user"].value("gid", 0u);
  return runner;
}

std::vector<std::string> ChrootRunner::Command(const std::vector<std::string>& program,
                                               const std::vector<std::string>& extra_env) const {
  std::vector<std::string> argv = {"/usr/bin/env", "-i"};
  argv.insert(argv.end(), env_.begin(), env_.end());
  argv.insert(argv.end(), extra_env.begin(), extra_env.end());
  // env execs unshare, which execs the program: the pid stays the same, so
  // a SIGTERM sent to it reaches the server itself.
  argv.insert(argv.end(),
              {unshare_, "--root=" + rootfs_, "--wd=" + cwd_, "--setgid=" + std::to_string(gid_),
               "--setuid=" + std::to_string(uid_), "--"});
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

int ChrootRunner::RunCli(const std::vector<std::string>& args, std::string* first_line) {
  std::vector<std::string> program = {"/usr/local/bin/skiff"};
  program.insert(program.end(), args.begin(), args.end());
  return support::RunCommand(Command(program, {}), first_line);
}

Status ChrootRunner::StartServer(const ServerSpec& spec, support::SkiffdProcess& server) {
  std::vector<std::string> program = entrypoint_;
  program.insert(program.end(), spec.args.begin(), spec.args.end());
  std::vector<std::string> argv = Command(program, spec.env);
  const std::string env = argv.front();
  argv.erase(argv.begin());
  return server.Start(env, argv, kStartTimeout);
}

int ChrootRunner::RunHealthCheck(uint16_t port) {
  return RunCli({"health", "--url", "ws://127.0.0.1:" + std::to_string(port) + "/"}, nullptr);
}

}  // namespace skiff::image_test
