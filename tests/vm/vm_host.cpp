// SPDX-License-Identifier: MIT
#include "vm_host.hpp"

#include <unistd.h>

VmHost::VmHost(const std::string &dir, int slots, const std::vector<std::string> &specs,
               const std::vector<std::string> &env)
    : slots_(slots), socket_(dir + "/ivshmem.sock"),
      shm_path_("/dev/shm/ava-vmhost-" + std::to_string(getpid())),
      proc_(argv(socket_, shm_path_, slots, specs), env) {
  std::string seen;
  ready_ = proc_.wait_for_line("ready", 30000, &seen);
  output_ = seen;
}

VmHost::~VmHost() {
  unlink(shm_path_.c_str());
}

std::vector<std::string> VmHost::argv(const std::string &socket, const std::string &shm_path,
                                      int slots, const std::vector<std::string> &specs) {
  std::vector<std::string> a = {
      AVA_BIN,        "vmhost",       "--socket",   socket,   "--slots",    std::to_string(slots),
      "--plugin-dir", AVA_PLUGIN_DIR, "--shm-path", shm_path, "--ready-fd", "1"};
  for (const std::string &s : specs) {
    a.push_back("--spec");
    a.push_back(s);
  }
  return a;
}

std::vector<std::string> VmHost::vm_args() const {
  return {"--ivshmem", socket_, "--vectors", std::to_string(slots_ + 1)};
}
