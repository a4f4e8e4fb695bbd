// `hilsim`: the command-line client (docs/CLI.md).
#include <iostream>
#include <string>
#include <vector>

#include "client/cli/app.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  return hilsim::cli::run(args, std::cout, std::cerr);
}
