// SPDX-License-Identifier: MIT
// A real vsock round trip over vsock_loopback (CID 1), plain and over
// io_uring. A host's vsock belongs to its infrastructure, so the test opens
// AF_VSOCK only with AVA_TEST_VSOCK=1, which test_vm_channels sets when it
// runs this program inside its QEMU guest; elsewhere it is skipped (ctest
// shows it as such).
#include <criterion/criterion.h>
#include <stdlib.h>

#include <string>

#include "transport/channel.hpp"
#include "transport/uring.hpp"

using ava::Address;
using ava::ChannelKind;
using ava::Status;

namespace {

constexpr uint32_t kAny = 0xffffffffu;

} // namespace

// Loopback vsock (vsock_loopback, CID 1) inside a VM: a real round trip,
// plain and over io_uring.
Test(vsock_address, loopback_round_trip_in_vm) {
  const char *enabled = std::getenv("AVA_TEST_VSOCK");
  if (enabled == nullptr || std::string(enabled) != "1")
    cr_skip_test("needs a vsock transport: AF_VSOCK is opened only with AVA_TEST_VSOCK=1 "
                 "(test_vm_channels runs this inside its guest)");
  Address addr;
  cr_assert_eq(ava::parse_address("vsock:any:any", ChannelKind::Unix, &addr).code, AVA_OK);
  std::unique_ptr<ava::Listener> listener;
  Status st = ava::listen_channel(addr, &listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_neq(listener->address().vsock_port, kAny, "listen() reports the chosen port");
  Address target = listener->address();
  target.vsock_cid = 1;
  std::unique_ptr<ava::Channel> client;
  st = ava::connect_channel(target, 5000, &client);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  std::unique_ptr<ava::Channel> server;
  st = listener->accept(&server, 5000);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_log_info("%s <-> %s", client->describe().c_str(), server->describe().c_str());
  if (ava::uring_available().is_ok())
    cr_expect_eq(ava::upgrade_channel_uring(&server).code, AVA_OK);
  ava_msg_hdr hdr{};
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.total_len = sizeof hdr + 3;
  const char body[3] = {'a', 'b', 'c'};
  struct iovec iov[2] = {{&hdr, sizeof hdr}, {const_cast<char *>(body), sizeof body}};
  cr_assert_eq(client->send(iov, 2).code, AVA_OK);
  ava::MsgBuf buf;
  st = server->recv(buf, 5000);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(buf.size(), sizeof hdr + 3);
  cr_expect_eq(buf.data()[sizeof hdr + 2], 'c');
}
