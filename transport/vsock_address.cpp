// SPDX-License-Identifier: MIT
// "vsock:CID:PORT": CID is a decimal number, "host" (2), "local" (1) or
// "any" (listen on every CID); PORT is a decimal number or "any" (listen()
// picks one).
#include <string>

#include "transport/vsock.hpp"

namespace ava::detail {
namespace {

Status bad(std::string_view text, std::string_view why) {
  return Status::error(AVA_E_PROTO,
                       "invalid address '" + std::string(text) + "': " + std::string(why));
}

// Decimal, at most 32 bits, no sign or spaces.
bool parse_u32(std::string_view s, uint32_t *out) {
  if (s.empty() || s.size() > 10)
    return false;
  uint64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > 0xffffffffu)
    return false;
  *out = static_cast<uint32_t>(value);
  return true;
}

bool parse_cid(std::string_view s, uint32_t *out) {
  if (s == "host") {
    *out = kVsockCidHost;
    return true;
  }
  if (s == "local") {
    *out = kVsockCidLocal;
    return true;
  }
  if (s == "any") {
    *out = kVsockAny;
    return true;
  }
  return parse_u32(s, out);
}

std::string number_or_any(uint32_t value) {
  return value == kVsockAny ? std::string("any") : std::to_string(value);
}

} // namespace

Status parse_vsock_address(std::string_view text, std::string_view rest, Address *out) {
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos)
    return bad(text, "expected vsock:CID:PORT");
  const std::string_view cid_text = rest.substr(0, colon);
  const std::string_view port_text = rest.substr(colon + 1);
  if (cid_text.empty())
    return bad(text, "empty CID");
  if (port_text.find(':') != std::string_view::npos)
    return bad(text, "expected vsock:CID:PORT");
  uint32_t cid = 0;
  if (!parse_cid(cid_text, &cid))
    return bad(text, "CID must be a decimal number below 2^32, 'host', 'local' or 'any'");
  uint32_t port = 0;
  if (port_text == "any")
    port = kVsockAny;
  else if (!parse_u32(port_text, &port))
    return bad(text, "port must be a decimal number below 2^32 or 'any'");
  Address addr;
  addr.kind = ChannelKind::Vsock;
  addr.vsock_cid = cid;
  addr.vsock_port = port;
  *out = std::move(addr);
  return Status::ok();
}

std::string vsock_address_text(const Address &address) {
  return "vsock:" + number_or_any(address.vsock_cid) + ":" + number_or_any(address.vsock_port);
}

} // namespace ava::detail
