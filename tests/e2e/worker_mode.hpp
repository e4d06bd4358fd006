// SPDX-License-Identifier: MIT
// Which way the workers that tests start serve their guests.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

// ctest runs the end-to-end suites twice: as they are (every guest gets a
// worker process of its own, the default) and with AVA_TEST_SHARED_WORKER=1,
// when every worker a test starts serves its guests in one process (--shared).
inline bool shared_worker_mode() {
  const char *v = std::getenv("AVA_TEST_SHARED_WORKER");
  return v != nullptr && std::string(v) == "1";
}

// The options that select the mode, for `ava worker` and `ava run` alike.
inline std::vector<std::string> worker_mode_args() {
  return shared_worker_mode() ? std::vector<std::string>{"--shared"} : std::vector<std::string>{};
}
