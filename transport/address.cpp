// SPDX-License-Identifier: MIT
// Address text: "unix:/path", "unix:@abstract", "tcp:host:port", "tcp:[v6]:port",
// "shm:/path" (the bootstrap socket of a shm worker)
// "vsock:CID:PORT" (parsed in vsock_address.cpp)
// and the bare forms "/path", "@abstract", "host:port", "[v6]:port".
#include <sys/un.h>

#include <array>
#include <new>

#include "transport/channel.hpp"
#include "transport/vsock.hpp"

namespace ava {
namespace {

Status bad(std::string_view text, std::string_view why) {
  return Status::error(AVA_E_PROTO,
                       "invalid address '" + std::string(text) + "': " + std::string(why));
}

Status parse_unix(std::string_view text, std::string_view path, Address *out) {
  if (path.empty())
    return bad(text, "empty socket path");
  if (path.find('\0') != std::string_view::npos)
    return bad(text, "NUL byte in socket path");
  constexpr size_t kSunPath = sizeof(sockaddr_un{}.sun_path);
  if (path[0] == '@') {
    if (path.size() == 1)
      return bad(text, "empty abstract socket name");
    // The abstract name replaces the '@' by a NUL byte and needs no terminator.
    if (path.size() > kSunPath)
      return bad(text,
                 "abstract socket name longer than " + std::to_string(kSunPath - 1) + " bytes");
  } else if (path.size() >= kSunPath) {
    return bad(text, "socket path longer than " + std::to_string(kSunPath - 1) + " bytes");
  }
  Address addr;
  addr.kind = ChannelKind::Unix;
  addr.path = std::string(path);
  *out = std::move(addr);
  return Status::ok();
}

// A shm address names the worker's bootstrap unix socket.
Status parse_shm(std::string_view text, std::string_view path, Address *out) {
  Status st = parse_unix(text, path, out);
  if (st.is_ok())
    out->kind = ChannelKind::Shm;
  return st;
}

// A kmod address names ava.ko's device node in a guest; a serial address
// the device of a virtio-serial port.
Status parse_kmod(std::string_view text, std::string_view path, Address *out) {
  if (path.empty() || path[0] != '/')
    return bad(text, "a kmod or serial address is an absolute device path, e.g. kmod:/dev/ava "
                     "or serial:/dev/vport0p1");
  if (path.find('\0') != std::string_view::npos)
    return bad(text, "NUL byte in device path");
  Address addr;
  addr.kind = ChannelKind::Kmod;
  addr.path = std::string(path);
  *out = std::move(addr);
  return Status::ok();
}

bool all_digits(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  return true;
}

Status parse_tcp(std::string_view text, std::string_view rest, Address *out) {
  std::string_view host;
  std::string_view port;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos)
      return bad(text, "missing ']' after IPv6 host");
    host = rest.substr(1, close - 1);
    std::string_view after = rest.substr(close + 1);
    if (after.empty() || after[0] != ':')
      return bad(text, "expected ':port' after ']'");
    port = after.substr(1);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos)
      return bad(text, "expected host:port");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return bad(text, "an IPv6 host must be written in brackets, e.g. [::1]:5000");
  }
  if (host.empty())
    return bad(text, "empty host");
  for (char c : host) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == '/' || c == '[' || c == ']')
      return bad(text, "invalid character in host");
  }
  if (!all_digits(port))
    return bad(text, "port must be a decimal number");
  if (port.size() > 5)
    return bad(text, "port out of range (0..65535)");
  unsigned value = 0;
  for (char c : port)
    value = value * 10 + static_cast<unsigned>(c - '0');
  if (value > 65535)
    return bad(text, "port out of range (0..65535)");
  Address addr;
  addr.kind = ChannelKind::Tcp;
  addr.host = std::string(host);
  addr.port = static_cast<uint16_t>(value);
  *out = std::move(addr);
  return Status::ok();
}

Status parse_address_impl(std::string_view text, ChannelKind default_kind, Address *out) {
  if (text.empty())
    return bad(text, "empty address");
  if (text.starts_with("unix:"))
    return parse_unix(text, text.substr(5), out);
  if (text.starts_with("tcp:"))
    return parse_tcp(text, text.substr(4), out);
  if (text.starts_with("shm:"))
    return parse_shm(text, text.substr(4), out);
  if (text.starts_with("vsock:"))
    return detail::parse_vsock_address(text, text.substr(6), out);
  if (text.starts_with("kmod:"))
    return parse_kmod(text, text.substr(5), out);
  if (text == "kmod")
    return parse_kmod(text, kDefaultKmodDevice, out);
  if (text.starts_with("serial:")) {
    Status st = parse_kmod(text, text.substr(7), out);
    if (st.is_ok())
      out->kind = ChannelKind::Serial;
    return st;
  }
  // Only a socket path can hold '/' or start with '@'; only tcp starts with '['.
  if (text[0] == '/' || text[0] == '@' || text[0] == '.' ||
      text.find('/') != std::string_view::npos)
    return default_kind == ChannelKind::Shm ? parse_shm(text, text, out)
                                            : parse_unix(text, text, out);
  if (text[0] == '[')
    return parse_tcp(text, text, out);
  if (default_kind == ChannelKind::Tcp)
    return parse_tcp(text, text, out);
  if (default_kind == ChannelKind::Shm)
    return parse_shm(text, text, out);
  return parse_unix(text, text, out);
}

} // namespace

std::string Address::to_string() const {
  if (kind == ChannelKind::Unix)
    return "unix:" + path;
  if (kind == ChannelKind::Shm)
    return "shm:" + path;
  if (kind == ChannelKind::Vsock)
    return detail::vsock_address_text(*this);
  if (kind == ChannelKind::Kmod)
    return "kmod:" + path;
  if (kind == ChannelKind::Serial)
    return "serial:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return "tcp:" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Status parse_address(std::string_view text, ChannelKind default_kind, Address *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "parse_address: no output");
  try {
    return parse_address_impl(text, default_kind, out);
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "parse_address: out of memory");
  }
}

Status parse_channel_kind(std::string_view text, ChannelKind *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "parse_channel_kind: no output");
  if (text == "unix") {
    *out = ChannelKind::Unix;
    return Status::ok();
  }
  if (text == "tcp") {
    *out = ChannelKind::Tcp;
    return Status::ok();
  }
  if (text == "shm") {
    *out = ChannelKind::Shm;
    return Status::ok();
  }
  if (text == "vsock") {
    *out = ChannelKind::Vsock;
    return Status::ok();
  }
  if (text == "kmod") {
    *out = ChannelKind::Kmod;
    return Status::ok();
  }
  if (text == "serial") {
    *out = ChannelKind::Serial;
    return Status::ok();
  }
  try {
    return Status::error(AVA_E_PROTO, "unknown channel '" + std::string(text) +
                                          "' (expected unix, tcp, shm, vsock, kmod or serial)");
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "parse_channel_kind: out of memory");
  }
}

} // namespace ava
