// SPDX-License-Identifier: MIT
// Worker plugins: one shared object per spec, libava_worker_<name>.so,
// exporting AVA_WORKER_SPEC_SYMBOL. Plugins are loaded on first use and never
// unloaded, because real accelerator libraries keep threads and callbacks
// that point into them.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "transport/channel.hpp"
#include "worker/ava_worker_rt.h"

namespace ava {

class PluginSet {
public:
  // allowed: the spec names that may be served; empty allows any plugin in plugin_dir.
  explicit PluginSet(std::string plugin_dir = {}, std::vector<std::string> allowed = {});
  PluginSet(const PluginSet &) = delete;
  PluginSet &operator=(const PluginSet &) = delete;

  // Registers a spec linked into the process (tests, fuzzers); runs its
  // init_epilogue unless a spec of that name is already known. Ignores an
  // invalid spec (and says why on stderr).
  void add(const ava_worker_spec *spec);
  // Finds the spec called name, loading its plugin on first use.
  Status find(std::string_view name, const ava_worker_spec **out);

  // Checks that a spec table is self-consistent (exposed for tests).
  static Status validate(const ava_worker_spec *spec);

private:
  Status load_locked(const std::string &name, const ava_worker_spec **out);
  bool allowed(std::string_view name) const;

  std::string plugin_dir_;
  std::vector<std::string> allowed_;
  std::mutex mutex_;
  std::map<std::string, const ava_worker_spec *, std::less<>> specs_;
};

} // namespace ava
