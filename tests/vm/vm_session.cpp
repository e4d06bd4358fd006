// SPDX-License-Identifier: MIT
#include "vm_session.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace {

constexpr const char *kBegin = "@@AVA-BEGIN ";
constexpr const char *kRc = "@@AVA-RC ";
constexpr const char *kSync = "@@AVA-SYNC ";
constexpr const char *kDone = "@@AVA-DONE@@";
// The whole guest's limit: every check in a job has its own, shorter one.
constexpr int kVmTimeoutS = 900;

std::string read_whole(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool has_program(const char *name) {
  const char *path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0)
      return true;
  return false;
}

// Polls a condition every 50 ms until it holds or the time is up.
template <class F> bool poll_until(int timeout_ms, F cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

} // namespace

VmResults parse_vm_results(const std::string &text) {
  VmResults r;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos)
      break;
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.starts_with(kBegin) && line.ends_with("@@")) {
      // "@@AVA-BEGIN name stream@@": the bytes run to "\n@@AVA-END name stream@@\n".
      const std::string tag = line.substr(strlen(kBegin), line.size() - strlen(kBegin) - 2);
      const std::string end = "\n@@AVA-END " + tag + "@@\n";
      const size_t stop = text.find(end, pos);
      if (stop == std::string::npos)
        break; // cut off: the guest died mid-block
      const size_t space = tag.rfind(' ');
      if (space == std::string::npos)
        continue;
      VmCheck &c = r.checks[tag.substr(0, space)];
      (tag.substr(space + 1) == "err" ? c.err : c.out) = text.substr(pos, stop - pos);
      pos = stop + end.size();
    } else if (line.starts_with(kRc) && line.ends_with("@@")) {
      const std::string rest = line.substr(strlen(kRc), line.size() - strlen(kRc) - 2);
      const size_t space = rest.rfind(' ');
      if (space != std::string::npos)
        r.checks[rest.substr(0, space)].rc = std::atoi(rest.c_str() + space + 1);
    } else if (line == kDone) {
      r.done = true;
    }
  }
  return r;
}

std::vector<std::string> kernel_problems(const std::string &log) {
  // "] BUG " is slub_debug's report of a corrupt object ("[ t] BUG kmalloc-64 ...").
  static const char *const kPatterns[] = {
      "BUG:",       "] BUG ", "WARNING:",           "Oops",        "lockdep",
      "Call Trace", "KASAN",  "general protection", "Kernel panic"};
  std::vector<std::string> found;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    for (const char *p : kPatterns)
      if (line.find(p) != std::string::npos) {
        found.push_back(line);
        break;
      }
  return found;
}

std::string vm_unavailable_reason() {
  if (!has_program("qemu-system-x86_64"))
    return "qemu-system-x86_64 is not installed (scripts/install-deps.sh installs "
           "qemu-system-x86)";
  return {};
}

std::map<std::string, std::string> vm_image_env() {
  std::map<std::string, std::string> env;
  std::istringstream in(read_whole(std::string(VM_IMAGE_DIR) + "/image.env"));
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos)
      env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

std::string sh_quote(const std::string &word) {
  std::string q = "'";
  for (char c : word)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

VmSession::VmSession(const std::string &name, const std::string &job,
                     const std::vector<std::string> &extra_args) {
  dir_ = make_temp_dir() + "/" + name;
  std::vector<std::string> argv = {"mkdir", "-p", dir_};
  run_proc(argv, {}, 10000);
  const std::string job_path = dir_ + "/job.sh";
  std::ofstream(job_path) << job;
  argv = {std::string(VM_DIR) + "/run-vm.sh",
          "--image",
          VM_IMAGE_DIR,
          "--job",
          job_path,
          "--out",
          dir_,
          "--timeout",
          std::to_string(kVmTimeoutS)};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  vm_ = std::make_unique<BackgroundProc>(argv, std::vector<std::string>{});
}

int VmSession::wait() {
  if (!exited_) {
    exit_code_ = vm_->wait_exit((kVmTimeoutS + 30) * 1000);
    exited_ = true;
  }
  return exit_code_;
}

std::string VmSession::results_text() const {
  return read_whole(dir_ + "/results.log");
}

std::string VmSession::console_text() const {
  return read_whole(dir_ + "/console.log");
}

std::string VmSession::kernel_log() const {
  const VmResults r = results();
  auto it = r.checks.find("dmesg");
  return it != r.checks.end() ? it->second.out : console_text();
}

bool VmSession::wait_for_check(const std::string &name, int timeout_ms) {
  return poll_until(timeout_ms, [&] { return results().checks.count(name) != 0; });
}

bool VmSession::wait_for_sync(const std::string &name, int timeout_ms) {
  const std::string marker = std::string(kSync) + name + "@@\n";
  return poll_until(timeout_ms, [&] { return results_text().find(marker) != std::string::npos; });
}

VmSession::~VmSession() {
  if (sync_fd_ >= 0)
    close(sync_fd_);
}

// The guest reads one line from its virtio-serial port ava.0, whose host end
// is the unix socket QEMU listens on in the session directory. The
// connection stays open: while it is closed the guest's reads see end of file.
bool VmSession::release_sync() {
  if (sync_fd_ < 0) {
    const std::string path = dir_ + "/ava.0.sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
      return false;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    sync_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sync_fd_ < 0)
      return false;
    if (connect(sync_fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
      close(sync_fd_);
      sync_fd_ = -1;
      return false;
    }
  }
  return write(sync_fd_, "go\n", 3) == 3;
}
