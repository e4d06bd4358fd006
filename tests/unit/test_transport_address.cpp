// SPDX-License-Identifier: MIT
// parse_address / parse_channel_kind / Address::to_string, table-driven.
#include <criterion/criterion.h>

#include <string>

#include "transport/channel.hpp"

using ava::Address;
using ava::ChannelKind;

namespace {

constexpr ChannelKind kUnix = ChannelKind::Unix;
constexpr ChannelKind kTcp = ChannelKind::Tcp;

struct AddressCase {
  std::string text;
  ChannelKind default_kind;
  int code;
  ChannelKind kind = kUnix;
  std::string path = "";
  std::string host = "";
  uint16_t port = 0;
};

const std::string kPath107 = "/" + std::string(106, 'p');
const std::string kAbstract107 = "@" + std::string(107, 'a');

const AddressCase kCases[] = {
    // Explicit unix.
    {"unix:/tmp/a.sock", kTcp, AVA_OK, kUnix, "/tmp/a.sock"},
    {"unix:@ava-demo", kTcp, AVA_OK, kUnix, "@ava-demo"},
    {"unix:relative.sock", kTcp, AVA_OK, kUnix, "relative.sock"},
    {"unix:" + kPath107, kTcp, AVA_OK, kUnix, kPath107},
    {"unix:" + kPath107 + "x", kUnix, AVA_E_PROTO},
    {"unix:" + kAbstract107, kUnix, AVA_OK, kUnix, kAbstract107},
    {"unix:" + kAbstract107 + "x", kUnix, AVA_E_PROTO},
    {"unix:", kUnix, AVA_E_PROTO},
    {"unix:@", kUnix, AVA_E_PROTO},
    {std::string("unix:/a\0b", 9), kUnix, AVA_E_PROTO},
    // Bare forms that can only be a socket.
    {"/tmp/a.sock", kTcp, AVA_OK, kUnix, "/tmp/a.sock"},
    {"@ava", kTcp, AVA_OK, kUnix, "@ava"},
    {"./w.sock", kTcp, AVA_OK, kUnix, "./w.sock"},
    {"run/w:1", kTcp, AVA_OK, kUnix, "run/w:1"},
    // Explicit tcp.
    {"tcp:127.0.0.1:5000", kUnix, AVA_OK, kTcp, "", "127.0.0.1", 5000},
    {"tcp:localhost:0", kUnix, AVA_OK, kTcp, "", "localhost", 0},
    {"tcp:host:65535", kUnix, AVA_OK, kTcp, "", "host", 65535},
    {"tcp:[::1]:7000", kUnix, AVA_OK, kTcp, "", "::1", 7000},
    {"tcp:[fe80::1%eth0]:7", kUnix, AVA_OK, kTcp, "", "fe80::1%eth0", 7},
    {"tcp:", kUnix, AVA_E_PROTO},
    {"tcp:host", kUnix, AVA_E_PROTO},
    {"tcp::5000", kUnix, AVA_E_PROTO},
    {"tcp:host:", kUnix, AVA_E_PROTO},
    {"tcp:host:65536", kUnix, AVA_E_PROTO},
    {"tcp:host:999999", kUnix, AVA_E_PROTO},
    {"tcp:host:12a", kUnix, AVA_E_PROTO},
    {"tcp:host:-1", kUnix, AVA_E_PROTO},
    {"tcp:host:+1", kUnix, AVA_E_PROTO},
    {"tcp:::1:5000", kUnix, AVA_E_PROTO},
    {"tcp:[::1]5000", kUnix, AVA_E_PROTO},
    {"tcp:[::1", kUnix, AVA_E_PROTO},
    {"tcp:[]:5000", kUnix, AVA_E_PROTO},
    {"tcp:ho st:1", kUnix, AVA_E_PROTO},
    // Bare tcp forms.
    {"[::1]:7000", kUnix, AVA_OK, kTcp, "", "::1", 7000},
    {"localhost:5000", kTcp, AVA_OK, kTcp, "", "localhost", 5000},
    {"worker.sock", kTcp, AVA_E_PROTO},
    // Ambiguous bare forms follow the default kind.
    {"localhost:5000", kUnix, AVA_OK, kUnix, "localhost:5000"},
    {"worker.sock", kUnix, AVA_OK, kUnix, "worker.sock"},
    // Nothing at all.
    {"", kUnix, AVA_E_PROTO},
    {"", kTcp, AVA_E_PROTO},
    // ava.ko's device in a guest.
    {"kmod:/dev/ava", kUnix, AVA_OK, ChannelKind::Kmod, "/dev/ava"},
    {"kmod", kTcp, AVA_OK, ChannelKind::Kmod, "/dev/ava"},
    {"kmod:0", kUnix, AVA_E_PROTO},
    {"kmod:", kTcp, AVA_E_PROTO},
    // A virtio-serial port in a guest.
    {"serial:/dev/vport0p1", kUnix, AVA_OK, ChannelKind::Serial, "/dev/vport0p1"},
    {"serial:vport0p1", kUnix, AVA_E_PROTO},
};

const char *kind_name(ChannelKind kind) {
  return kind == kTcp ? "tcp" : "unix";
}

} // namespace

Test(address, parse_table) {
  for (const AddressCase &c : kCases) {
    Address addr;
    addr.path = "untouched";
    ava::Status st = ava::parse_address(c.text, c.default_kind, &addr);
    cr_expect_eq(st.code, c.code, "'%s' (default %s): code %d, expected %d (%s)", c.text.c_str(),
                 kind_name(c.default_kind), st.code, c.code, st.message.c_str());
    if (c.code != AVA_OK) {
      cr_expect(!st.message.empty(), "'%s': an error needs a message", c.text.c_str());
      continue;
    }
    if (st.code != AVA_OK)
      continue;
    cr_expect_eq(addr.kind, c.kind, "'%s': kind %s, expected %s", c.text.c_str(),
                 kind_name(addr.kind), kind_name(c.kind));
    cr_expect_eq(addr.path, c.path, "'%s': path '%s', expected '%s'", c.text.c_str(),
                 addr.path.c_str(), c.path.c_str());
    cr_expect_eq(addr.host, c.host, "'%s': host '%s', expected '%s'", c.text.c_str(),
                 addr.host.c_str(), c.host.c_str());
    cr_expect_eq(addr.port, c.port, "'%s': port %u, expected %u", c.text.c_str(), addr.port,
                 c.port);
  }
}

Test(address, to_string_round_trips) {
  for (const AddressCase &c : kCases) {
    if (c.code != AVA_OK)
      continue;
    Address addr;
    cr_assert_eq(ava::parse_address(c.text, c.default_kind, &addr).code, AVA_OK);
    const std::string text = addr.to_string();
    // The printed form is explicit, so the default kind must not matter.
    for (ChannelKind other : {kUnix, kTcp}) {
      Address again;
      ava::Status st = ava::parse_address(text, other, &again);
      cr_expect_eq(st.code, AVA_OK, "'%s' -> '%s' does not parse: %s", c.text.c_str(), text.c_str(),
                   st.message.c_str());
      cr_expect(again.kind == addr.kind && again.path == addr.path && again.host == addr.host &&
                    again.port == addr.port,
                "'%s' -> '%s' does not round-trip", c.text.c_str(), text.c_str());
    }
  }
}

Test(address, to_string_forms) {
  Address unix_addr;
  unix_addr.path = "/run/ava.sock";
  cr_expect_eq(unix_addr.to_string(), std::string("unix:/run/ava.sock"));
  Address tcp_addr;
  tcp_addr.kind = kTcp;
  tcp_addr.host = "::1";
  tcp_addr.port = 80;
  cr_expect_eq(tcp_addr.to_string(), std::string("tcp:[::1]:80"));
  tcp_addr.host = "example.org";
  cr_expect_eq(tcp_addr.to_string(), std::string("tcp:example.org:80"));
}

Test(address, channel_kind_table) {
  struct KindCase {
    const char *text;
    int code;
    ChannelKind kind;
  };
  const KindCase cases[] = {
      {"unix", AVA_OK, kUnix},
      {"tcp", AVA_OK, kTcp},
      {"TCP", AVA_E_PROTO, kUnix},
      {"", AVA_E_PROTO, kUnix},
      {"udp", AVA_E_PROTO, kUnix},
      {"tcp ", AVA_E_PROTO, kUnix},
      {"vsock", AVA_OK, ChannelKind::Vsock},
      {"kmod", AVA_OK, ChannelKind::Kmod},
      {"kmod ", AVA_E_PROTO, kUnix},
      {"serial", AVA_OK, ChannelKind::Serial},
  };
  for (const KindCase &c : cases) {
    ChannelKind kind = c.kind == kTcp ? kUnix : kTcp;
    ava::Status st = ava::parse_channel_kind(c.text, &kind);
    cr_expect_eq(st.code, c.code, "'%s': code %d, expected %d", c.text, st.code, c.code);
    if (c.code == AVA_OK)
      cr_expect_eq(kind, c.kind, "'%s': wrong kind", c.text);
    else
      cr_expect(!st.message.empty(), "'%s': an error needs a message", c.text);
  }
}
