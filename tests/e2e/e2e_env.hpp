// SPDX-License-Identifier: MIT
// Paths of the build's programs (compile definitions) and the environment a
// remoted program gets when it is pointed at a worker by hand.
#pragma once

#include <string>
#include <vector>

#include "worker_mode.hpp"

// Removes any ava configuration the developer's shell may carry.
inline std::vector<std::string> clean_env() {
  return {"AVA_WORKER=", "AVA_CHANNEL=", "AVA_CONFIG=", "AVA_WORKER_DEMO=", "AVA_LOG="};
}

inline std::vector<std::string> guest_env(const std::string &worker) {
  std::vector<std::string> env = clean_env();
  env.push_back("AVA_WORKER=" + worker);
  env.push_back(std::string("LD_LIBRARY_PATH=") + AVA_GUEST_LIB_DIR);
  return env;
}

inline std::vector<std::string> worker_argv(const std::string &listen) {
  std::vector<std::string> argv = {AVA_BIN, "worker", "--spec", "demo", "--listen", listen};
  for (const std::string &a : worker_mode_args())
    argv.push_back(a);
  return argv;
}
