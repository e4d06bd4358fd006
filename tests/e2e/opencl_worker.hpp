// SPDX-License-Identifier: MIT
// An `ava worker --spec opencl` with a host configuration of the test's, for
// OpenCL programs that run only under ava (they attack the worker, or need a
// host limit); the session report shows that the worker served them.
#pragma once

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "ocl_run.hpp"
#include "proc.hpp"
#include "remoted.hpp"

struct OpenclWorker {
  std::string dir = make_temp_dir();
  std::string address;
  std::string report = dir + "/sessions.report";
  std::string config = dir + "/host.toml";
  BackgroundProc proc;
  bool ready = false;
  std::string output; // what it printed until it listened

  // scheme: the channel its guests use ("unix", or "shm" for a shared heap).
  explicit OpenclWorker(const std::string &host_toml, const std::string &scheme = "unix")
      : address(scheme + ":" + dir + "/worker.sock"), proc(argv(host_toml), ocl::child_env()) {
    ready = proc.wait_for_line("worker.sock", 20000, &output);
  }
  ~OpenclWorker() {
    stop();
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
  std::vector<std::string> argv(const std::string &host_toml) {
    std::ofstream(config) << host_toml;
    std::vector<std::string> a = {AVA_BIN,    "worker", "--spec",        "opencl",
                                  "--listen", address,  "--ready-fd",    "1",
                                  "--report", report,   "--host-config", config};
    for (const std::string &m : worker_mode_args())
      a.push_back(m);
    return a;
  }
  // A program of tests/opencl as this worker's guest.
  ProcResult run(const std::vector<std::string> &args) const {
    std::vector<std::string> env = ocl::child_env();
    for (const std::string &e : guest_env(address))
      env.push_back(e);
    return run_proc(args, env, ocl::kTimeoutMs);
  }
  // Stops the worker (every session ends and reports) and reads its report.
  remoted::WorkerReport stop() {
    proc.kill_now(SIGTERM);
    proc.wait_exit(10000);
    return remoted::WorkerReport::read(report);
  }
};
