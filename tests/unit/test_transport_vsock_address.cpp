// SPDX-License-Identifier: MIT
// vsock addresses: parse / to_string table, and the entry points a vsock
// address reaches, rejected before any socket exists. This host's vsock
// belongs to its infrastructure, so nothing here opens an AF_VSOCK socket;
// the real round trip is test_transport_vsock_loopback.cpp.
#include <criterion/criterion.h>
#include <stdlib.h>

#include <string>
#include <thread>
#include <vector>

#include "transport/channel.hpp"
#include "transport/uring.hpp"

using ava::Address;
using ava::ChannelKind;
using ava::Status;

namespace {

constexpr uint32_t kAny = 0xffffffffu;

struct VsockCase {
  std::string text;
  int code;
  uint32_t cid = 0;
  uint32_t port = 0;
  std::string printed = ""; // canonical form, when it differs from text
};

const VsockCase kCases[] = {
    {"vsock:3:5000", AVA_OK, 3, 5000},
    {"vsock:2:1", AVA_OK, 2, 1},
    {"vsock:host:5000", AVA_OK, 2, 5000, "vsock:2:5000"},
    {"vsock:local:7", AVA_OK, 1, 7, "vsock:1:7"},
    {"vsock:any:5000", AVA_OK, kAny, 5000},
    {"vsock:any:any", AVA_OK, kAny, kAny},
    {"vsock:0:0", AVA_OK, 0, 0},
    {"vsock:4294967294:4294967294", AVA_OK, 4294967294u, 4294967294u},
    {"vsock:4294967295:1", AVA_OK, kAny, 1, "vsock:any:1"},
    {"vsock:007:0010", AVA_OK, 7, 10, "vsock:7:10"},
    {"vsock:", AVA_E_PROTO},
    {"vsock:3", AVA_E_PROTO},
    {"vsock:3:", AVA_E_PROTO},
    {"vsock::5000", AVA_E_PROTO},
    {"vsock:3:5000:1", AVA_E_PROTO},
    {"vsock:4294967296:1", AVA_E_PROTO},
    {"vsock:3:4294967296", AVA_E_PROTO},
    {"vsock:99999999999:1", AVA_E_PROTO},
    {"vsock:-1:5000", AVA_E_PROTO},
    {"vsock:+3:5000", AVA_E_PROTO},
    {"vsock:3:-1", AVA_E_PROTO},
    {"vsock: 3:5000", AVA_E_PROTO},
    {"vsock:3:5000 ", AVA_E_PROTO},
    {"vsock:Host:5000", AVA_E_PROTO},
    {"vsock:hypervisor:5000", AVA_E_PROTO},
    {"vsock:0x3:5000", AVA_E_PROTO},
    {"vsock:3:0x10", AVA_E_PROTO},
    {"vsock:[3]:5000", AVA_E_PROTO},
};

} // namespace

Test(vsock_address, parse_table) {
  for (const VsockCase &c : kCases) {
    // The default kind never matters: the prefix says vsock.
    for (ChannelKind default_kind : {ChannelKind::Unix, ChannelKind::Tcp}) {
      Address addr;
      Status st = ava::parse_address(c.text, default_kind, &addr);
      cr_expect_eq(st.code, c.code, "'%s': code %d, expected %d (%s)", c.text.c_str(), st.code,
                   c.code, st.message.c_str());
      if (c.code != AVA_OK) {
        cr_expect(st.message.find(c.text) != std::string::npos, "'%s': message names it: %s",
                  c.text.c_str(), st.message.c_str());
        continue;
      }
      if (st.code != AVA_OK)
        continue;
      cr_expect(addr.kind == ChannelKind::Vsock, "'%s': not vsock", c.text.c_str());
      cr_expect_eq(addr.vsock_cid, c.cid, "'%s': cid %u, expected %u", c.text.c_str(),
                   addr.vsock_cid, c.cid);
      cr_expect_eq(addr.vsock_port, c.port, "'%s': port %u, expected %u", c.text.c_str(),
                   addr.vsock_port, c.port);
      const std::string printed = c.printed.empty() ? c.text : c.printed;
      cr_expect_eq(addr.to_string(), printed, "'%s' printed as '%s', expected '%s'", c.text.c_str(),
                   addr.to_string().c_str(), printed.c_str());
    }
  }
}

Test(vsock_address, to_string_round_trips) {
  for (const VsockCase &c : kCases) {
    if (c.code != AVA_OK)
      continue;
    Address addr;
    cr_assert_eq(ava::parse_address(c.text, ChannelKind::Unix, &addr).code, AVA_OK);
    Address again;
    Status st = ava::parse_address(addr.to_string(), ChannelKind::Tcp, &again);
    cr_expect_eq(st.code, AVA_OK, "%s", st.message.c_str());
    cr_expect(again.kind == ChannelKind::Vsock && again.vsock_cid == addr.vsock_cid &&
                  again.vsock_port == addr.vsock_port,
              "'%s' -> '%s' does not round-trip", c.text.c_str(), addr.to_string().c_str());
  }
}

Test(vsock_address, other_kinds_are_unaffected) {
  Address addr;
  cr_assert_eq(ava::parse_address("tcp:127.0.0.1:5000", ChannelKind::Unix, &addr).code, AVA_OK);
  cr_expect(addr.kind == ChannelKind::Tcp);
  cr_expect_eq(addr.vsock_cid, 0u);
  cr_expect_eq(addr.vsock_port, 0u);
  // Only the "vsock:" prefix selects vsock; a bare CID:PORT is tcp or a path.
  cr_assert_eq(ava::parse_address("3:5000", ChannelKind::Tcp, &addr).code, AVA_OK);
  cr_expect(addr.kind == ChannelKind::Tcp);
  cr_assert_eq(ava::parse_address("vsockets/w.sock", ChannelKind::Tcp, &addr).code, AVA_OK);
  cr_expect(addr.kind == ChannelKind::Unix);
}

// Rejected before any socket exists, so these run everywhere.
Test(vsock_address, connect_refuses_wildcards_without_a_socket) {
  for (const char *text : {"vsock:any:5000", "vsock:3:any"}) {
    Address addr;
    cr_assert_eq(ava::parse_address(text, ChannelKind::Unix, &addr).code, AVA_OK);
    std::unique_ptr<ava::Channel> channel;
    Status st = ava::connect_channel(addr, 0, &channel);
    cr_expect_eq(st.code, AVA_E_PROTO, "%s: %d %s", text, st.code, st.message.c_str());
    cr_expect(st.message.find("only be listened on") != std::string::npos, "%s",
              st.message.c_str());
    cr_expect(channel == nullptr);
  }
}
