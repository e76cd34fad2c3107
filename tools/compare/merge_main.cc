// skiff-merge-runs OUT.json IN.json...: one side's rounds and executables into
// one benchmark JSON for skiff-compare (see merge.h). Exit 0 on success, 3 on
// bad input or an unwritable output, 64 on bad arguments, like skiff-compare.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cmd/command_line.h"

#include "compare/merge.h"

int main(int argc, char** argv) {
  constexpr int kBadInput = 3;
  // The table: two positionals, nothing else.
  CLI::App app(
      "Joins benchmark JSON runs (rounds of one side, or several executables) into one\n"
      "run for skiff-compare. Exit codes: 0 written, 3 bad input or an unwritable\n"
      "OUT.json, 64 bad arguments.",
      "skiff-merge-runs");
  skiff::cmd::UseSkiffConventions(app);
  std::string out_path;
  std::vector<std::string> in_paths;
  app.add_option("OUT.json", out_path, "where the merged run goes")->required();
  app.add_option("IN.json", in_paths, "the runs to merge")->required();
  const int exit_code = skiff::cmd::ParseOrExitCode(
      app, std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  if (exit_code >= 0) return exit_code;

  std::vector<skiff::compare::MergeInput> inputs;
  for (const std::string& path : in_paths) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in) {
      std::cerr << "skiff-merge-runs: " << path << ": cannot be read\n";
      return kBadInput;
    }
    inputs.push_back({path, text.str()});
  }
  auto merged = skiff::compare::MergeRuns(inputs);
  if (!merged.ok()) {
    std::cerr << "skiff-merge-runs: " << merged.status().message() << "\n";
    return kBadInput;
  }
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  out << *merged;
  out.close();
  if (!out) {
    std::cerr << "skiff-merge-runs: " << out_path << ": cannot be written\n";
    return kBadInput;
  }
  return 0;
}
