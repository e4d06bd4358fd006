// SPDX-License-Identifier: MIT
// AF_VSOCK carrier: "vsock:CID:PORT" addresses and stream sockets between a
// VM and its host, framed by the shared socket channel code. Parsing and
// printing never open a socket.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "transport/channel.hpp"

namespace ava::detail {

// CID names accepted besides decimal numbers.
inline constexpr uint32_t kVsockCidLocal = 1;      // VMADDR_CID_LOCAL: loopback
inline constexpr uint32_t kVsockCidHost = 2;       // VMADDR_CID_HOST
inline constexpr uint32_t kVsockAny = 0xffffffffu; // VMADDR_CID_ANY / VMADDR_PORT_ANY

// text is the whole address (for messages), rest what follows "vsock:".
Status parse_vsock_address(std::string_view text, std::string_view rest, Address *out);
// "vsock:CID:PORT" with numbers, "any" for the wildcard CID or port.
std::string vsock_address_text(const Address &address);

Status connect_vsock(const Address &address, int connect_timeout_ms, std::unique_ptr<Channel> *out);
Status listen_vsock(const Address &address, std::unique_ptr<Listener> *out);

} // namespace ava::detail
