// skiff-compare: did HEAD's benchmark run get slower than BASE's, and did any
// deterministic counter change? See cli.h and docs/benchmarks.md.
#include <iostream>
#include <string>
#include <vector>

#include "compare/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return skiff::compare::RunCompareCli(args, std::cout, std::cerr);
}
