// SPDX-License-Identifier: MIT
// One guest worker's cgroup below the one the host configuration names
// ([guest] cgroup): made, with its memory limit, before the worker starts
// (which joins it through procs_fd()), removed once the worker is gone.
// Works with cgroup v2 (memory.max) and the v1 memory controller
// (memory.limit_in_bytes).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "tools/ava/host_config.hpp"
#include "tools/ava/process.hpp"

namespace ava::tool {

class GuestCgroup {
public:
  GuestCgroup(const GuestCgroup &) = delete;
  GuestCgroup &operator=(const GuestCgroup &) = delete;
  ~GuestCgroup();

  // <sandbox.cgroup>/ava-guest-<our pid>-<serial>.
  static Status create(const GuestSandbox &sandbox, uint64_t serial,
                       std::unique_ptr<GuestCgroup> *out);
  // Its cgroup.procs, open for writing: a process that writes "0" joins.
  int procs_fd() const { return procs_.get(); }

private:
  GuestCgroup() = default;
  Status write_first(std::initializer_list<const char *> names, const std::string &value);

  std::string path_;
  Fd procs_;
};

} // namespace ava::tool
