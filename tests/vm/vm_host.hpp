// SPDX-License-Identifier: MIT
// The host side of one test boot: `ava vmhost` with its shared memory in a
// file the test can read (VmShm), and the small waits the VM tests share.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "proc.hpp"
#include "remoted.hpp"

class VmHost {
public:
  // slots slots serving specs (empty: every plugin), the workers getting env.
  VmHost(const std::string &dir, int slots, const std::vector<std::string> &specs,
         const std::vector<std::string> &env);
  ~VmHost();
  VmHost(const VmHost &) = delete;
  VmHost &operator=(const VmHost &) = delete;
  bool ready() const { return ready_; }
  const std::string &output() const { return output_; }
  const std::string &shm_path() const { return shm_path_; }
  pid_t pid() const { return proc_.pid(); }
  // The slot workers' session reports, once at least min_sessions sessions
  // of spec ran calls (workers report as their guest goes; bounded wait).
  remoted::WorkerReport report(const std::string &spec, uint64_t min_sessions) const;
  // run-vm.sh's arguments for the ivshmem-doorbell device.
  std::vector<std::string> vm_args() const;

private:
  static std::vector<std::string> argv(const std::string &socket, const std::string &shm_path,
                                       const std::string &report, int slots,
                                       const std::vector<std::string> &specs);

  int slots_;
  std::string socket_;
  std::string shm_path_;
  std::string report_;
  BackgroundProc proc_;
  bool ready_ = false;
  std::string output_;
};

inline bool process_gone(pid_t pid) {
  return pid <= 0 || kill(pid, 0) != 0;
}

// Polls (bounded) until cond holds.
template <class F> bool eventually(int timeout_ms, F cond) {
  for (int waited = 0; waited < timeout_ms; waited += 50) {
    if (cond())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return cond();
}
