// SPDX-License-Identifier: MIT
// An `ava worker` for the demo spec on a unix socket of a temporary
// directory, with a session report and, optionally, a host configuration;
// stopped (and its directory removed) when it goes out of scope.
#pragma once

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "proc.hpp"
#include "remoted.hpp"

struct Worker {
  std::string dir = make_temp_dir();
  std::string address = "unix:" + dir + "/worker.sock";
  std::string report = dir + "/sessions.report";
  std::string config = dir + "/host.toml";
  BackgroundProc proc;

  explicit Worker(const std::vector<std::string> &extra = {}, const std::string &host_toml = "")
      : proc(argv(extra, host_toml), clean_env()) {
    std::string seen;
    ready = proc.wait_for_line("worker.sock", 20000, &seen);
    output = seen;
  }
  ~Worker() {
    stop();
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
  std::vector<std::string> argv(const std::vector<std::string> &extra,
                                const std::string &host_toml) {
    // Per-guest workers may run as another user: they must be able to write the report.
    chmod(dir.c_str(), 0777);
    std::vector<std::string> a = {AVA_BIN, "worker",     "--spec", "demo",     "--listen",
                                  address, "--ready-fd", "1",      "--report", report};
    if (!host_toml.empty()) {
      std::ofstream(config) << host_toml;
      a.push_back("--host-config");
      a.push_back(config);
    }
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  remoted::WorkerReport stop() {
    proc.kill_now(SIGTERM);
    proc.wait_exit(10000);
    return remoted::WorkerReport::read(report);
  }
  bool ready = false;
  std::string output;
};
