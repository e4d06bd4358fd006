// SPDX-License-Identifier: MIT
// Runs programs for end-to-end tests: captured stdout/stderr, extra
// environment, a hard timeout (the child is killed, never waited on forever).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

struct ProcResult {
  int exit_code = -1; // exit status, or 128 + signal
  bool timed_out = false;
  std::string out;
  std::string err;
};

// env entries are "NAME=value" added to (or replacing in) our environment;
// "NAME=" with nothing after '=' removes NAME.
ProcResult run_proc(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                    int timeout_ms);

// A background process (e.g. a worker) that is killed when the object dies.
class BackgroundProc {
public:
  BackgroundProc(const std::vector<std::string> &argv, const std::vector<std::string> &env);
  ~BackgroundProc();
  BackgroundProc(const BackgroundProc &) = delete;
  BackgroundProc &operator=(const BackgroundProc &) = delete;
  pid_t pid() const { return pid_; }
  // Reads stdout until a line containing text appears (or timeout).
  bool wait_for_line(const std::string &text, int timeout_ms, std::string *seen = nullptr);
  void kill_now(int sig);
  // Waits for exit; returns exit code (128 + signal) or -1 on timeout.
  int wait_exit(int timeout_ms);

private:
  // Output is drained all the time: a child blocked on a full pipe would
  // look like a hang of the code under test.
  void drain();
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string buffered_;
  bool eof_ = false;
  std::thread drainer_;
  bool reaped_ = false;
};

std::string make_temp_dir();

// The processes whose parent is pid (from /proc/PID/stat).
std::vector<pid_t> child_pids(pid_t parent);
