// SPDX-License-Identifier: MIT
#include "vm_host.hpp"

#include <unistd.h>

VmHost::VmHost(const std::string &dir, int slots, const std::vector<std::string> &specs,
               const std::vector<std::string> &env)
    : slots_(slots), socket_(dir + "/ivshmem.sock"),
      shm_path_("/dev/shm/ava-vmhost-" + std::to_string(getpid())),
      report_(dir + "/sessions.report"),
      proc_(argv(socket_, shm_path_, report_, slots, specs), env) {
  std::string seen;
  ready_ = proc_.wait_for_line("ready", 30000, &seen);
  output_ = seen;
}

VmHost::~VmHost() {
  unlink(shm_path_.c_str());
}

std::vector<std::string> VmHost::argv(const std::string &socket, const std::string &shm_path,
                                      const std::string &report, int slots,
                                      const std::vector<std::string> &specs) {
  std::vector<std::string> a = {
      AVA_BIN,        "vmhost",       "--socket",   socket,   "--slots",    std::to_string(slots),
      "--plugin-dir", AVA_PLUGIN_DIR, "--shm-path", shm_path, "--ready-fd", "1",
      "--report",     report};
  for (const std::string &s : specs) {
    a.push_back("--spec");
    a.push_back(s);
  }
  return a;
}

std::vector<std::string> VmHost::vm_args() const {
  return {"--ivshmem", socket_, "--vectors", std::to_string(slots_ + 1)};
}

remoted::WorkerReport VmHost::report(const std::string &spec, uint64_t min_sessions) const {
  constexpr int kReportWaitMs = 15000;
  remoted::WorkerReport r;
  eventually(kReportWaitMs, [&] {
    r = remoted::WorkerReport::read(report_);
    return r.of(spec).sessions >= min_sessions;
  });
  return r;
}
