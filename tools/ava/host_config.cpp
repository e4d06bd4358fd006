// SPDX-License-Identifier: MIT
#include "tools/ava/host_config.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "shim/toml.hpp"

namespace ava::tool {
namespace {

Status error_at(std::string_view source, int line, const std::string &message) {
  return Status::error(AVA_E_PROTO,
                       std::string(source) + ":" + std::to_string(line) + ": error: " + message);
}

// A user or group given by name, or as a number.
template <class Id> bool parse_id(const std::string &text, Id *out) {
  unsigned long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v > 0xfffffffeull)
    return false;
  *out = static_cast<Id>(v);
  return true;
}

// A setting of a worker plugin: its key and the values it may take.
struct PluginSetting {
  std::string_view key;
  std::vector<std::string_view> values;
  const char *choices; // for messages
};

const PluginSetting *plugin_setting(std::string_view key) {
  static const PluginSetting kSettings[] = {
      // specs/opencl/opencl_program.spec.inc (ava_cl_arg_kinds_known)
      {"opencl.kernels_without_arg_info", {"refuse", "allow"}, "\"refuse\" or \"allow\""},
  };
  for (const PluginSetting &s : kSettings)
    if (s.key == key)
      return &s;
  return nullptr;
}

} // namespace

Status parse_host_config(std::string_view text, std::string_view source, HostConfig *out) {
  toml::Document doc;
  Status st = toml::parse(text, source, &doc);
  if (!st.is_ok())
    return st;
  HostConfig config;
  config.source = std::string(source);
  for (const auto &[table, line] : doc.tables)
    if (table != "guest" && table != "opencl")
      return error_at(source, line, "unknown table [" + table + "] (known: [guest], [opencl])");
  std::optional<gid_t> primary_gid;
  // Named references, not structured bindings: the lambda below captures
  // them, which clang (and so clang-tidy) before 16 refuses.
  for (const auto &item : doc.values) {
    const std::string &key = item.first;
    const toml::Entry &entry = item.second;
    const int line = entry.line;
    const auto *text_value = std::get_if<std::string>(&entry.value);
    const auto *int_value = std::get_if<int64_t>(&entry.value);
    auto want = [&](const char *type) {
      return error_at(source, line,
                      key + " must be " + type + ", not a " +
                          std::string(toml::type_name(entry.value)));
    };
    if (key == "guest.isolation") {
      if (text_value == nullptr)
        return want("a string");
      if (*text_value != "process" && *text_value != "shared")
        return error_at(source, line,
                        "guest.isolation is \"process\" or \"shared\", not \"" + *text_value +
                            "\"");
      config.shared = *text_value == "shared";
    } else if (key == "guest.user") {
      std::string name = text_value != nullptr  ? *text_value
                         : int_value != nullptr ? std::to_string(*int_value)
                                                : std::string();
      if (name.empty())
        return want("a user name or uid");
      uid_t uid = 0;
      if (const passwd *pw = ::getpwnam(name.c_str())) {
        config.sandbox.uid = pw->pw_uid;
        primary_gid = pw->pw_gid;
      } else if (parse_id(name, &uid)) {
        config.sandbox.uid = uid;
      } else {
        return error_at(source, line, "guest.user: no user '" + name + "'");
      }
    } else if (key == "guest.group") {
      std::string name = text_value != nullptr  ? *text_value
                         : int_value != nullptr ? std::to_string(*int_value)
                                                : std::string();
      if (name.empty())
        return want("a group name or gid");
      gid_t gid = 0;
      if (const group *gr = ::getgrnam(name.c_str()))
        config.sandbox.gid = gr->gr_gid;
      else if (parse_id(name, &gid))
        config.sandbox.gid = gid;
      else
        return error_at(source, line, "guest.group: no group '" + name + "'");
    } else if (key == "guest.cgroup") {
      if (text_value == nullptr)
        return want("a string");
      struct stat sb {};
      if (text_value->empty() || (*text_value)[0] != '/' || ::stat(text_value->c_str(), &sb) != 0 ||
          !S_ISDIR(sb.st_mode))
        return error_at(source, line, "guest.cgroup: '" + *text_value + "' is not a directory");
      config.sandbox.cgroup = *text_value;
    } else if (key == "guest.cmds_per_sec" || key == "guest.bytes_per_sec" ||
               key == "guest.device_memory") {
      if (int_value == nullptr || *int_value < 0)
        return error_at(source, line, key + " must be a number (0: no limit)");
      const uint64_t v = static_cast<uint64_t>(*int_value);
      (key == "guest.cmds_per_sec"    ? config.limits.cmds_per_sec
       : key == "guest.bytes_per_sec" ? config.limits.bytes_per_sec
                                      : config.limits.device_memory) = v;
    } else if (key == "guest.threads" || key == "guest.send_timeout_ms" ||
               key == "guest.connections" || key == "guest.connections_per_peer" ||
               key == "guest.objects" || key == "guest.callbacks") {
      if (int_value == nullptr || *int_value <= 0 || *int_value > INT32_MAX)
        return error_at(source, line, key + " must be a positive number");
      const auto v = static_cast<uint32_t>(*int_value);
      if (key == "guest.threads")
        config.limits.threads = v;
      else if (key == "guest.send_timeout_ms")
        config.limits.send_timeout_ms = static_cast<int>(v);
      else if (key == "guest.connections")
        config.limits.connections = v;
      else if (key == "guest.objects")
        config.limits.objects = v;
      else if (key == "guest.callbacks")
        config.limits.callbacks = v;
      else
        config.limits.connections_per_peer = v;
    } else if (key == "guest.kept_bytes") {
      if (int_value == nullptr || *int_value <= 0)
        return error_at(source, line, key + " must be a positive number of bytes");
      config.limits.kept_bytes = static_cast<uint64_t>(*int_value);
    } else if (key == "guest.credentials") {
      if (text_value == nullptr)
        return want("a string");
      auto table = std::make_shared<CredentialTable>();
      Status loaded = CredentialTable::load(*text_value, table.get());
      if (!loaded.is_ok())
        return error_at(source, line, "guest.credentials: " + loaded.message);
      config.credentials = std::move(table);
    } else if (key == "guest.memory_max") {
      if (int_value == nullptr || *int_value <= 0)
        return error_at(source, line, "guest.memory_max must be a positive number of bytes");
      config.sandbox.memory_max = static_cast<uint64_t>(*int_value);
    } else if (const PluginSetting *setting = plugin_setting(key)) {
      if (text_value == nullptr)
        return want("a string");
      if (std::find(setting->values.begin(), setting->values.end(), *text_value) ==
          setting->values.end())
        return error_at(source, line,
                        key + " is " + setting->choices + ", not \"" + *text_value + "\"");
      config.plugin_settings[key] = *text_value;
    } else {
      return error_at(source, line,
                      "unknown key '" + key +
                          "' (known: guest.isolation, guest.user, guest.group, guest.cgroup, "
                          "guest.memory_max, guest.cmds_per_sec, guest.bytes_per_sec, "
                          "guest.device_memory, guest.threads, guest.send_timeout_ms, "
                          "guest.connections, guest.connections_per_peer, guest.objects, "
                          "guest.callbacks, guest.kept_bytes, guest.credentials, "
                          "opencl.kernels_without_arg_info)");
    }
  }
  if (config.sandbox.uid && !config.sandbox.gid)
    config.sandbox.gid = primary_gid ? *primary_gid : static_cast<gid_t>(*config.sandbox.uid);
  if (config.sandbox.memory_max != 0 && config.sandbox.cgroup.empty())
    return Status::error(AVA_E_PROTO,
                         std::string(source) + ": error: guest.memory_max needs guest.cgroup");
  if (config.shared && (config.sandbox.uid || !config.sandbox.cgroup.empty()))
    return Status::error(AVA_E_PROTO, std::string(source) +
                                          ": error: guest.user, guest.group and guest.cgroup "
                                          "confine per-guest processes: not with isolation = "
                                          "\"shared\"");
  *out = std::move(config);
  return Status::ok();
}

Status load_host_config(const std::string &path, HostConfig *out) {
  const std::string file = path.empty() ? kDefaultHostConfig : path;
  std::ifstream in(file);
  if (!in) {
    if (path.empty() && errno == ENOENT) {
      *out = HostConfig{};
      return Status::ok();
    }
    return Status::error(AVA_E_PROTO, file + ": error: " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_host_config(text.str(), file, out);
}

} // namespace ava::tool
