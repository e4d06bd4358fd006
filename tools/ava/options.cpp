// SPDX-License-Identifier: MIT
#include "tools/ava/options.hpp"

#include <charconv>
#include <optional>

namespace ava::tool {
namespace {

Status usage(std::string message) {
  return Status::error(AVA_E_PROTO, std::move(message));
}

// One "--name", "--name=value" or "--name value" option being read from args.
struct Option {
  std::string name;
  std::optional<std::string> inline_value;
};

Option split_option(const std::string &arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos)
    return {arg, std::nullopt};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

// Takes the option's value from "=value" or from the next argument.
Status take_value(std::span<const std::string> args, size_t *index, const Option &option,
                  std::string *value) {
  if (option.inline_value) {
    *value = *option.inline_value;
  } else if (*index + 1 < args.size()) {
    *value = args[++*index];
  } else {
    return usage("option '" + option.name + "' needs a value");
  }
  if (value->empty())
    return usage("option '" + option.name + "' needs a non-empty value");
  return Status::ok();
}

Status reject_value(const Option &option) {
  if (option.inline_value)
    return usage("option '" + option.name + "' takes no value");
  return Status::ok();
}

// Spec names travel in HELLO and name plugin files: keep them short and plain.
Status check_spec_name(const std::string &name) {
  if (name.size() >= AVA_SPEC_NAME_MAX)
    return usage("spec name '" + name + "' is too long");
  for (char c : name) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
    if (!plain)
      return usage("spec name '" + name + "' may only hold letters, digits, '_' and '-'");
  }
  return Status::ok();
}

Status parse_fd(const std::string &text, int *out) {
  int value = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    return usage("'" + text + "' is not a file descriptor number");
  *out = value;
  return Status::ok();
}

bool is_option(const std::string &arg) {
  return arg.size() > 1 && arg[0] == '-';
}

} // namespace

Status parse_run_args(std::span<const std::string> args, RunOptions *out) {
  RunOptions options;
  size_t i = 0;
  for (; i < args.size(); i++) {
    const std::string &arg = args[i];
    if (arg == "--") {
      i++;
      break;
    }
    if (!is_option(arg))
      break;
    Option option = split_option(arg);
    std::string value;
    Status status;
    if (option.name == "--channel") {
      if (!(status = take_value(args, &i, option, &value)).is_ok())
        return status;
      // The private worker `ava run` starts listens locally: unix, tcp or shm.
      const bool local =
          parse_channel_kind(value, &options.channel).is_ok() &&
          (options.channel == ChannelKind::Unix || options.channel == ChannelKind::Tcp ||
           options.channel == ChannelKind::Shm);
      if (!local)
        return usage("unknown channel '" + value + "' (expected unix, tcp or shm)");
      options.channel_set = true;
    } else if (option.name == "--worker") {
      if (!(status = take_value(args, &i, option, &options.worker)).is_ok())
        return status;
    } else if (option.name == "--spec") {
      if (!(status = take_value(args, &i, option, &value)).is_ok() ||
          !(status = check_spec_name(value)).is_ok())
        return status;
      options.specs.push_back(value);
    } else if (option.name == "--report") {
      if (!(status = take_value(args, &i, option, &options.report)).is_ok())
        return status;
    } else if (option.name == "--shared") {
      if (!(status = reject_value(option)).is_ok())
        return status;
      options.shared = true;
    } else {
      return usage("unknown option '" + option.name + "'");
    }
  }
  if (options.shared && !options.worker.empty())
    return usage("--shared is how the private worker serves; a --worker serves as it does");
  if (!options.report.empty() && !options.worker.empty())
    return usage("--report is written by the private worker; a --worker has its own");
  if (i >= args.size())
    return usage("no program given (usage: ava run [OPTIONS] -- PROGRAM [ARGS...])");
  options.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  *out = std::move(options);
  return Status::ok();
}

Status parse_worker_args(std::span<const std::string> args, WorkerCommandOptions *out) {
  WorkerCommandOptions options;
  bool have_listen = false;
  for (size_t i = 0; i < args.size(); i++) {
    const std::string &arg = args[i];
    if (!is_option(arg))
      return usage("unexpected argument '" + arg + "'");
    Option option = split_option(arg);
    std::string value;
    Status status;
    if (option.name == "--spec") {
      if (!(status = take_value(args, &i, option, &value)).is_ok() ||
          !(status = check_spec_name(value)).is_ok())
        return status;
      options.specs.push_back(value);
    } else if (option.name == "--listen") {
      if (!(status = take_value(args, &i, option, &value)).is_ok())
        return status;
      if (!(status = parse_address(value, ChannelKind::Unix, &options.listen)).is_ok())
        return usage("bad --listen address '" + value + "': " + status.message);
      have_listen = true;
    } else if (option.name == "--plugin-dir") {
      if (!(status = take_value(args, &i, option, &options.plugin_dir)).is_ok())
        return status;
    } else if (option.name == "--ready-fd") {
      if (!(status = take_value(args, &i, option, &value)).is_ok() ||
          !(status = parse_fd(value, &options.ready_fd)).is_ok())
        return status;
    } else if (option.name == "--exit-when-idle") {
      if (!(status = reject_value(option)).is_ok())
        return status;
      options.exit_when_idle = true;
    } else if (option.name == "--io-uring") {
      if (!(status = reject_value(option)).is_ok())
        return status;
      options.io_uring = true;
    } else if (option.name == "--netlink") {
      if (!(status = reject_value(option)).is_ok())
        return status;
      options.netlink = true;
    } else if (option.name == "--report") {
      if (!(status = take_value(args, &i, option, &options.report)).is_ok())
        return status;
    } else if (option.name == "--serve-fd") {
      if (!(status = take_value(args, &i, option, &value)).is_ok() ||
          !(status = parse_fd(value, &options.serve_fd)).is_ok())
        return status;
    } else if (option.name == "--shared") {
      if (!(status = reject_value(option)).is_ok())
        return status;
      options.shared = true;
    } else if (option.name == "--host-config") {
      if (!(status = take_value(args, &i, option, &options.host_config)).is_ok())
        return status;
    } else {
      return usage("unknown option '" + option.name + "'");
    }
  }
  if (options.netlink && (have_listen || options.io_uring || options.exit_when_idle))
    return usage(
        "--netlink serves kernel connections: no --listen, --io-uring or --exit-when-idle");
  if (!have_listen && !options.netlink)
    return usage("--listen ADDRESS (or --netlink) is required");
  if (options.serve_fd >= 0 && (options.netlink || options.exit_when_idle || options.shared))
    return usage("--serve-fd serves one connection: no --netlink, --exit-when-idle or --shared");
  *out = std::move(options);
  return Status::ok();
}

} // namespace ava::tool
