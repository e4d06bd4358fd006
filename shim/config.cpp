// SPDX-License-Identifier: MIT
#include "shim/config.hpp"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <new>
#include <vector>

#include "shim/toml.hpp"
#include "transport/text_file.hpp"

namespace ava {
namespace {

constexpr const char *kDefaultPath = "/etc/ava/guest.toml";
constexpr std::string_view kKeyList =
    "channel, worker, connect_timeout_ms, call_timeout_ms, callback_timeout_ms, max_message, "
    "credential_file";
// Tuning variables the guest library reads (shim/env.cpp callers and the
// channels); those set go with the configuration a HELLO carries.
constexpr const char *kTuningVariables[] = {
    "AVA_SPIN_US",     "AVA_ZEROCOPY_MIN",    "AVA_PIPELINE_CHUNK", "AVA_PIPELINE_WINDOW",
    "AVA_BATCH",       "AVA_BATCH_BYTES",     "AVA_BATCH_CALLS",    "AVA_BATCH_US",
    "AVA_SHM_HEAP_MB", "AVA_SHM_RING_MB",     "AVA_SHM_SPIN_NS",    "AVA_SOCKET_SPIN_NS",
    "AVA_MAP_IN_HEAP", "AVA_BUFFERS_IN_HEAP", "AVA_STAGE_BLOCKING"};
constexpr std::string_view kSpecPrefix = "spec.";

Status config_error(std::string_view where, std::string_view message) {
  return Status::error(AVA_E_PROTO, std::string(where) + ": error: " + std::string(message));
}

// Where each resolved setting came from, for messages.
struct Origins {
  std::string channel;
  std::string worker;
  std::string credential_file;
};

Status set_timeout(std::string_view key, const toml::Entry &entry, const std::string &where,
                   int *field) {
  const auto *v = std::get_if<int64_t>(&entry.value);
  // Built with append: GCC 12 at -O3 flags `"..." + std::string` (a false -Wrestrict).
  std::string message = "'";
  message.append(key);
  if (v == nullptr)
    return config_error(
        where, message.append("' must be an integer, not a ").append(toml::type_name(entry.value)));
  if (*v < -1 || *v > INT_MAX)
    return config_error(where, message.append("' must be -1 (no limit) or 0..")
                                   .append(std::to_string(INT_MAX))
                                   .append(" milliseconds"));
  *field = static_cast<int>(*v);
  return Status::ok();
}

// Applies one known key; returns AVA_E_UNSUPPORTED for an unknown key so the
// caller can phrase that error for where the key was.
Status apply_key(std::string_view key, const toml::Entry &entry, const std::string &where,
                 GuestConfig *cfg, Origins *origins) {
  if (key == "channel") {
    const auto *v = std::get_if<std::string>(&entry.value);
    if (v == nullptr)
      return config_error(
          where,
          "'channel' must be a string (\"unix\", \"tcp\", \"shm\", \"vsock\" or \"kmod\"), not a " +
              std::string(toml::type_name(entry.value)));
    Status st = parse_channel_kind(*v, &cfg->channel);
    if (!st.is_ok())
      return config_error(where, st.message);
    cfg->channel_set = true;
    origins->channel = where;
    return Status::ok();
  }
  if (key == "worker") {
    const auto *v = std::get_if<std::string>(&entry.value);
    if (v == nullptr)
      return config_error(where, "'worker' must be a string (an address), not a " +
                                     std::string(toml::type_name(entry.value)));
    cfg->worker = *v;
    origins->worker = where;
    return Status::ok();
  }
  if (key == "credential_file") {
    const auto *v = std::get_if<std::string>(&entry.value);
    if (v == nullptr || v->empty())
      return config_error(where, "'credential_file' must be a path");
    cfg->credential_file = *v;
    origins->credential_file = where;
    return Status::ok();
  }
  if (key == "connect_timeout_ms")
    return set_timeout(key, entry, where, &cfg->connect_timeout_ms);
  if (key == "call_timeout_ms")
    return set_timeout(key, entry, where, &cfg->call_timeout_ms);
  if (key == "callback_timeout_ms")
    return set_timeout(key, entry, where, &cfg->callback_timeout_ms);
  if (key == "max_message") {
    const auto *v = std::get_if<int64_t>(&entry.value);
    if (v == nullptr)
      return config_error(where, "'max_message' must be an integer, not a " +
                                     std::string(toml::type_name(entry.value)));
    if (*v < static_cast<int64_t>(sizeof(ava_msg_hdr)))
      return config_error(where, "'max_message' must be at least " +
                                     std::to_string(sizeof(ava_msg_hdr)) + " bytes");
    cfg->max_message = static_cast<uint64_t>(*v);
    return Status::ok();
  }
  return Status::error(AVA_E_UNSUPPORTED, "unknown key");
}

bool has_prefix_kind(std::string_view text) {
  return text.starts_with("unix:") || text.starts_with("tcp:") || text.starts_with("shm:") ||
         text.starts_with("vsock:") || text.starts_with("kmod:") || text.starts_with("serial:");
}

// Without an explicit channel, "host:port" means tcp rather than a relative
// socket path named like that, which is what a user writing it expects.
ChannelKind infer_kind(std::string_view worker) {
  if (worker.starts_with("tcp:") || worker.starts_with("["))
    return ChannelKind::Tcp;
  if (worker.starts_with("shm:"))
    return ChannelKind::Shm;
  if (worker.starts_with("vsock:"))
    return ChannelKind::Vsock;
  if (worker.starts_with("kmod:") || worker == "kmod")
    return ChannelKind::Kmod;
  if (worker.starts_with("serial:"))
    return ChannelKind::Serial;
  if (worker.starts_with("unix:") || worker.find('/') != std::string_view::npos ||
      worker.starts_with("@") || worker.starts_with("."))
    return ChannelKind::Unix;
  const size_t colon = worker.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == worker.size())
    return ChannelKind::Unix;
  for (char c : worker.substr(colon + 1))
    if (c < '0' || c > '9')
      return ChannelKind::Unix;
  return ChannelKind::Tcp;
}

const char *kind_name(ChannelKind kind) {
  switch (kind) {
  case ChannelKind::Tcp:
    return "tcp";
  case ChannelKind::Shm:
    return "shm";
  case ChannelKind::Vsock:
    return "vsock";
  case ChannelKind::Kmod:
    return "kmod";
  case ChannelKind::Serial:
    return "serial";
  case ChannelKind::Unix:
    break;
  }
  return "unix";
}

class ConfigBuilder {
public:
  ConfigBuilder(std::string_view source, std::string_view spec_name)
      : source_(source), spec_name_(spec_name) {}

  Status apply_file(std::string_view text) {
    toml::Document doc;
    Status st = toml::parse(text, source_, &doc);
    if (!st.is_ok())
      return st;
    for (const auto &[name, line] : doc.tables) {
      if (name == "spec")
        continue;
      if (name.starts_with(kSpecPrefix) && name.find('.', kSpecPrefix.size()) == std::string::npos)
        continue;
      return config_error(where(line), "unknown table [" + name + "] (expected [spec.NAME])");
    }
    // Top-level keys first, so that a [spec.NAME] value wins whatever the order.
    GuestConfig scratch;
    Origins scratch_origins;
    std::vector<std::pair<std::string_view, const toml::Entry *>> own;
    for (const auto &[name, entry] : doc.values) {
      const std::string at = where(entry.line);
      if (name.find('.') == std::string::npos) {
        st = apply_key(name, entry, at, &cfg_, &origins_);
      } else if (name.starts_with(kSpecPrefix)) {
        const std::string_view rest = std::string_view(name).substr(kSpecPrefix.size());
        const size_t dot = rest.find('.');
        if (dot == std::string_view::npos)
          return config_error(at, "'" + name +
                                      "' is not a setting: settings for spec NAME go "
                                      "in a [spec.NAME] table");
        const std::string_view spec = rest.substr(0, dot);
        const std::string_view key = rest.substr(dot + 1);
        if (key.find('.') != std::string_view::npos)
          return config_error(at, "unknown key '" + name + "'");
        // Other specs' tables are checked as strictly as our own.
        st = apply_key(key, entry, at, &scratch, &scratch_origins);
        if (st.is_ok() && spec == spec_name_)
          own.emplace_back(key, &entry);
      } else {
        return config_error(at, "unknown key '" + name + "' (expected one of: " +
                                    std::string(kKeyList) + ", or a [spec.NAME] table)");
      }
      if (st.code == AVA_E_UNSUPPORTED)
        return config_error(at, "unknown key '" + name +
                                    "' (expected one of: " + std::string(kKeyList) + ")");
      if (!st.is_ok())
        return st;
    }
    for (const auto &[key, entry] : own) {
      st = apply_key(key, *entry, where(entry->line), &cfg_, &origins_);
      if (!st.is_ok())
        return st;
    }
    return Status::ok();
  }

  Status apply_env(const std::function<const char *(const char *)> &getenv_fn) {
    if (const char *v = lookup(getenv_fn, "AVA_CHANNEL")) {
      Status st = parse_channel_kind(v, &cfg_.channel);
      if (!st.is_ok())
        return config_error("AVA_CHANNEL", st.message);
      cfg_.channel_set = true;
      origins_.channel = "AVA_CHANNEL";
      used_env_.emplace_back("AVA_CHANNEL");
    }
    if (const char *v = lookup(getenv_fn, "AVA_CREDENTIAL_FILE")) {
      cfg_.credential_file = v;
      origins_.credential_file = "AVA_CREDENTIAL_FILE";
      used_env_.emplace_back("AVA_CREDENTIAL_FILE");
    }
    for (const char *name : kTuningVariables)
      if (const char *v = lookup(getenv_fn, name))
        cfg_.tuning.emplace_back(name, v);
    const std::string specific = worker_env_name(spec_name_);
    for (const std::string &name : {std::string("AVA_WORKER"), specific}) {
      if (const char *v = lookup(getenv_fn, name.c_str())) {
        cfg_.worker = v;
        origins_.worker = name;
        used_env_.push_back(name);
      }
    }
    return Status::ok();
  }

  Status finish(GuestConfig *out) {
    // The kmod channel has one natural address: the device ava.ko creates.
    if (cfg_.worker.empty() && cfg_.channel_set && cfg_.channel == ChannelKind::Kmod)
      cfg_.worker = std::string("kmod:") + kDefaultKmodDevice;
    if (!cfg_.worker.empty()) {
      const ChannelKind default_kind = cfg_.channel_set ? cfg_.channel : infer_kind(cfg_.worker);
      Address addr;
      Status st = parse_address(cfg_.worker, default_kind, &addr);
      if (!st.is_ok())
        return config_error(origins_.worker, st.message);
      if (cfg_.channel_set && addr.kind != cfg_.channel && has_prefix_kind(cfg_.worker))
        return config_error(origins_.worker,
                            "worker '" + cfg_.worker + "' is a " + kind_name(addr.kind) +
                                " address but the channel is " + kind_name(cfg_.channel) + " (" +
                                origins_.channel + ")");
      cfg_.channel = addr.kind;
    }
    std::string joined = source_;
    for (const std::string &name : used_env_)
      joined += (joined.empty() ? "" : " + ") + name;
    cfg_.source = joined.empty() ? "built-in defaults" : joined;
    *out = std::move(cfg_);
    return Status::ok();
  }

private:
  std::string where(int line) const { return source_ + ":" + std::to_string(line); }

  // An empty variable counts as unset, as a shell user expects from AVA_WORKER= .
  static const char *lookup(const std::function<const char *(const char *)> &getenv_fn,
                            const char *name) {
    if (!getenv_fn)
      return nullptr;
    const char *v = getenv_fn(name);
    return v != nullptr && v[0] != '\0' ? v : nullptr;
  }

  std::string source_;
  std::string spec_name_;
  GuestConfig cfg_;
  Origins origins_;
  std::vector<std::string> used_env_;
};

} // namespace

std::string worker_env_name(std::string_view spec_name) {
  std::string name = "AVA_WORKER_";
  for (char c : spec_name) {
    if (c >= 'a' && c <= 'z')
      name.push_back(static_cast<char>(c - 'a' + 'A'));
    else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      name.push_back(c);
    else
      name.push_back('_');
  }
  return name;
}

Status parse_guest_config(std::string_view text, std::string_view source,
                          std::string_view spec_name,
                          const std::function<const char *(const char *)> &getenv_fn,
                          GuestConfig *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "parse_guest_config: no output");
  try {
    ConfigBuilder builder(source, spec_name);
    Status st = builder.apply_file(text);
    if (!st.is_ok())
      return st;
    st = builder.apply_env(getenv_fn);
    if (!st.is_ok())
      return st;
    return builder.finish(out);
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "guest configuration: out of memory");
  }
}

std::string describe_guest_config(const GuestConfig &config) {
  std::string text;
  auto quoted = [](std::string_view v) {
    std::string q = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\')
        q.push_back('\\');
      q.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return q + "\"";
  };
  text += "channel = " + quoted(kind_name(config.channel)) + "\n";
  text += "worker = " + quoted(config.worker) + "\n";
  text += "connect_timeout_ms = " + std::to_string(config.connect_timeout_ms) + "\n";
  text += "call_timeout_ms = " + std::to_string(config.call_timeout_ms) + "\n";
  text += "callback_timeout_ms = " + std::to_string(config.callback_timeout_ms) + "\n";
  text += "max_message = " + std::to_string(config.max_message) + "\n";
  if (!config.credential_file.empty())
    text += "credential_file = " + quoted(config.credential_file) + "\n";
  text += "source = " + quoted(config.source) + "\n";
  for (const auto &[name, value] : config.tuning)
    text += "env." + name + " = " + quoted(value) + "\n";
  return text;
}

Status read_credential(const GuestConfig &config, std::string *token) {
  token->clear();
  if (config.credential_file.empty())
    return Status::ok();
  try {
    Status st = read_text_file(config.credential_file.c_str(), token, nullptr, true);
    if (!st.is_ok())
      return st;
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "credential: out of memory");
  }
  while (!token->empty() && (token->back() == '\n' || token->back() == '\r'))
    token->pop_back();
  if (token->empty() || token->size() > AVA_CREDENTIAL_MAX)
    return Status::error(AVA_E_PROTO, config.credential_file + ": error: a credential has 1 to " +
                                          std::to_string(AVA_CREDENTIAL_MAX) + " bytes");
  return Status::ok();
}

Status load_guest_config(std::string_view spec_name, GuestConfig *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "load_guest_config: no output");
  try {
    // secure_getenv: a set-uid program must not be steered to another file or worker.
    auto env = [](const char *name) -> const char * { return ::secure_getenv(name); };
    std::string text;
    std::string source;
    bool missing = false;
    const char *explicit_path = env("AVA_CONFIG");
    if (explicit_path != nullptr && explicit_path[0] != '\0') {
      Status st = read_text_file(explicit_path, &text, &missing);
      if (!st.is_ok())
        return st;
      if (missing)
        return Status::error(AVA_E_PROTO, std::string(explicit_path) +
                                              ": error: no such file (named by AVA_CONFIG)");
      source = explicit_path;
    } else {
      Status st = read_text_file(kDefaultPath, &text, &missing);
      if (!st.is_ok())
        return st;
      if (!missing)
        source = kDefaultPath;
    }
    return parse_guest_config(text, source, spec_name, env, out);
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "guest configuration: out of memory");
  }
}

} // namespace ava
