#include "support/skiffd_process.h"

#include <algorithm>

namespace skiff::support {

SkiffdProcess::~SkiffdProcess() { Kill(); }

Status SkiffdProcess::Start(const std::string& binary, const std::vector<std::string>& flags,
                            std::chrono::milliseconds timeout) {
  if (running()) return Internal("skiffd is already running");
  std::vector<std::string> args = {binary};
  args.insert(args.end(), flags.begin(), flags.end());
  const bool has_port = std::any_of(flags.begin(), flags.end(),
                                    [](const std::string& f) { return f.rfind("--port", 0) == 0; });
  if (!has_port) args.insert(args.end(), {"--port", "0"});
  SKIFF_RETURN_IF_ERROR(process_.Start(args));
  Result<std::string> line = process_.ReadLine(timeout);
  // Later output goes nowhere: skiffd prints nothing more on stdout.
  process_.CloseOutput();
  const std::string first = line.ok() ? *line : "";
  port_ = first.rfind("skiffd listening on", 0) == 0 ? PortOfListeningLine(first) : 0;
  if (port_ == 0) {
    Kill();
    return Unavailable("skiffd did not start (first line: '" + first + "')");
  }
  return Status::Ok();
}

Status SkiffdProcess::Stop(std::chrono::milliseconds timeout) {
  if (!running()) return Status::Ok();
  Result<int> status = process_.Stop(timeout);
  port_ = 0;
  if (!status.ok()) return status.status();
  if (*status != 0) return Internal("skiffd exited with status " + std::to_string(*status));
  return Status::Ok();
}

void SkiffdProcess::Kill() {
  process_.Kill();
  port_ = 0;
}

int RunCommand(const std::vector<std::string>& argv, std::string* first_line) {
  std::string output;
  Result<int> status = RunToEnd(argv, &output);
  if (!status.ok()) return -1;
  if (first_line != nullptr) *first_line = output.substr(0, output.find('\n'));
  return *status;
}

}  // namespace skiff::support
