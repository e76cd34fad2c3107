// skiff-merge-runs OUT.json IN.json...: one side's rounds and executables into
// one benchmark JSON for skiff-compare (see merge.h). Exit 0 on success, 3 on
// bad input or an unwritable output, 64 on bad arguments, like skiff-compare.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compare/merge.h"

int main(int argc, char** argv) {
  constexpr int kBadInput = 3;
  constexpr int kUsage = 64;
  constexpr char kHelp[] = "Usage: skiff-merge-runs OUT.json IN.json [IN.json...]\n";
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kHelp;
    return 0;
  }
  if (argc < 3) {
    std::cerr << kHelp;
    return kUsage;
  }
  std::vector<skiff::compare::MergeInput> inputs;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in) {
      std::cerr << "skiff-merge-runs: " << argv[i] << ": cannot be read\n";
      return kBadInput;
    }
    inputs.push_back({argv[i], text.str()});
  }
  auto merged = skiff::compare::MergeRuns(inputs);
  if (!merged.ok()) {
    std::cerr << "skiff-merge-runs: " << merged.status().message() << "\n";
    return kBadInput;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << *merged;
  out.close();
  if (!out) {
    std::cerr << "skiff-merge-runs: " << argv[1] << ": cannot be written\n";
    return kBadInput;
  }
  return 0;
}
