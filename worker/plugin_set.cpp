// SPDX-License-Identifier: MIT
#include "worker/plugin_set.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "worker/log.hpp"

namespace ava {
namespace {

// Spec names become file names, so only a conservative alphabet is accepted.
bool is_plain_name(std::string_view name) {
  if (name.empty() || name.size() >= AVA_SPEC_NAME_MAX)
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

constexpr uint32_t kMaxFuncs = 1u << 20;
constexpr uint32_t kMaxTypes = 1u << 20;

} // namespace

PluginSet::PluginSet(std::string plugin_dir, std::vector<std::string> allowed)
    : plugin_dir_(std::move(plugin_dir)), allowed_(std::move(allowed)) {}

Status PluginSet::validate(const ava_worker_spec *spec) {
  if (spec == nullptr)
    return Status::error(AVA_E_SPEC, "spec table is NULL");
  if (spec->name == nullptr || !is_plain_name(spec->name))
    return Status::error(AVA_E_SPEC, "spec has no valid name");
  std::string name = spec->name;
  if (spec->dispatch == nullptr)
    return Status::error(AVA_E_SPEC, "spec '" + name + "' has no dispatch function");
  if (spec->nfuncs > kMaxFuncs || (spec->nfuncs > 0 && spec->func_flags == nullptr))
    return Status::error(AVA_E_SPEC, "spec '" + name + "' has a bad function table");
  for (uint32_t i = 0; i < spec->nfuncs; ++i) {
    uint32_t flags = spec->func_flags[i];
    uint32_t cls = flags & (AVA_F_SYNC | AVA_F_ASYNC);
    if ((flags & ~AVA_F_ALL) != 0 || (flags != 0 && cls == 0))
      return Status::error(AVA_E_SPEC, "spec '" + name + "' function " + std::to_string(i) +
                                           " has bad flags " + std::to_string(flags));
  }
  if (spec->ntypes > kMaxTypes)
    return Status::error(AVA_E_SPEC, "spec '" + name + "' has too many handle types");
  return Status::ok();
}

bool PluginSet::allowed(std::string_view name) const {
  return allowed_.empty() || std::find(allowed_.begin(), allowed_.end(), name) != allowed_.end();
}

void PluginSet::add(const ava_worker_spec *spec) {
  Status valid = validate(spec);
  if (!valid.is_ok()) {
    worker_log("ignoring spec: " + valid.message);
    return;
  }
  std::lock_guard lock(mutex_);
  if (specs_.contains(std::string_view(spec->name)))
    return;
  specs_.emplace(spec->name, spec);
  if (spec->init_epilogue != nullptr)
    spec->init_epilogue();
}

Status PluginSet::find(std::string_view name, const ava_worker_spec **out) {
  *out = nullptr;
  if (!is_plain_name(name))
    return Status::error(AVA_E_SPEC, "invalid spec name");
  if (!allowed(name))
    return Status::error(AVA_E_SPEC, "this worker does not serve spec '" + std::string(name) + "'");
  try {
    std::lock_guard lock(mutex_);
    auto it = specs_.find(name);
    if (it != specs_.end()) {
      *out = it->second;
      return Status::ok();
    }
    return load_locked(std::string(name), out);
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "out of memory loading spec");
  }
}

Status PluginSet::load_locked(const std::string &name, const ava_worker_spec **out) {
  if (plugin_dir_.empty())
    return Status::error(AVA_E_SPEC, "no plugin for spec '" + name + "' (no plugin directory)");
  std::string path = plugin_dir_ + "/libava_worker_" + name + ".so";
  // Never dlclose()d: see the header.
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *why = ::dlerror();
    // dlerror() already names the file.
    return Status::error(AVA_E_SPEC, why != nullptr ? why : "cannot load " + path);
  }
  void *symbol = ::dlsym(handle, AVA_WORKER_SPEC_SYMBOL);
  if (symbol == nullptr)
    return Status::error(AVA_E_SPEC, path + " does not export " AVA_WORKER_SPEC_SYMBOL);
  auto export_fn = reinterpret_cast<ava_worker_spec_export_fn>(symbol);
  const ava_worker_spec *spec = export_fn();
  Status valid = validate(spec);
  if (!valid.is_ok())
    return Status::error(AVA_E_SPEC, path + ": " + valid.message);
  if (name != spec->name)
    return Status::error(AVA_E_SPEC,
                         path + " serves spec '" + spec->name + "', not '" + name + "'");
  specs_.emplace(name, spec);
  if (spec->init_epilogue != nullptr)
    spec->init_epilogue();
  *out = spec;
  if (worker_debug_enabled())
    worker_log("loaded " + path);
  return Status::ok();
}

} // namespace ava
