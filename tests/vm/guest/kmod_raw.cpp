// SPDX-License-Identifier: MIT
// Runs in the guest: claims a /dev/ava slot through the kmod channel and
// sends the demo worker calls no guest library would — an unknown function,
// argument blocks of the wrong size, input bytes for an output buffer — then
// a good call. Prints each status; exits 0 when every bad call was refused
// with the status the spec's command table gives and the good call worked.
// On a policed slot ava.ko refuses them, on any other the host does: the
// statuses are the same.
//
// `kmod_raw --unknown-spec` on a policed slot: ava.ko refuses a HELLO for a
// spec without a registered table, and the channel says which module is
// missing (tests/vm/guest/police_probe.c checks AVA_IOC_SUBMIT itself).
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "demo_wire.h"
#include "tests/common/wire_message.hpp"
#include "transport/channel.hpp"

namespace {

std::vector<uint8_t> message(uint16_t kind, uint32_t func, const void *args, uint32_t len,
                             uint64_t payload) {
  wire_test::MsgHeader h;
  h.kind = kind;
  h.spec_id = AVA_DEMO_SPEC_ID;
  h.func_id = func;
  h.flags = kind == AVA_MSG_CALL ? AVA_F_SYNC : 0;
  h.call_id = func + 1;
  const std::vector<uint8_t> zeros(payload);
  return wire_test::build_message(h, args, len, zeros.data(), payload);
}

// One message out, one in: the reply's status, or the channel's error.
int round_trip(ava::Channel &ch, const std::vector<uint8_t> &m, int64_t *ret = nullptr) {
  iovec iov{const_cast<uint8_t *>(m.data()), m.size()};
  ava::Status st = ch.send(&iov, 1);
  ava::MsgBuf reply;
  if (st.is_ok())
    st = ch.recv(reply, 30000);
  if (!st.is_ok()) {
    std::fprintf(stderr, "kmod_raw: %s\n", st.message.c_str());
    return st.code;
  }
  const size_t at = sizeof(ava_msg_hdr) + sizeof(ava_reply_common);
  if (ret != nullptr && reply.size() >= at + sizeof *ret)
    std::memcpy(ret, reply.data() + at, sizeof *ret);
  return reply.header()->status;
}

// A channel on a /dev/ava slot of its own, or nullptr (said on stderr).
std::unique_ptr<ava::Channel> connect_slot() {
  ava::Address addr;
  std::unique_ptr<ava::Channel> ch;
  ava::Status st = ava::parse_address("kmod:/dev/ava", ava::ChannelKind::Kmod, &addr);
  if (st.is_ok())
    st = ava::connect_channel(addr, 10000, &ch);
  if (!st.is_ok())
    std::fprintf(stderr, "kmod_raw: %s\n", st.message.c_str());
  return ch;
}

// The guest library's channel on a policed claim, saying HELLO for a spec
// whose table no module registered: the send fails, naming the module.
int unknown_spec() {
  std::unique_ptr<ava::Channel> ch = connect_slot();
  if (!ch)
    return 2;
  ava_hello h{};
  ava_hello_fill(&h, 999, 1, "nosuchspec", 0, "test");
  std::vector<uint8_t> m = message(AVA_MSG_HELLO, 0, &h, sizeof h, 0);
  iovec iov{m.data(), m.size()};
  const ava::Status st = ch->send(&iov, 1);
  std::printf("HELLO for nosuchspec: %s\n", st.message.c_str());
  return st.code == AVA_E_UNSUPPORTED && st.message.find("ava_<spec>.ko") != std::string::npos ? 0
                                                                                               : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--unknown-spec") == 0)
    return unknown_spec();
  std::unique_ptr<ava::Channel> ch = connect_slot();
  if (!ch)
    return 2;
  ava_hello h{};
  ava_hello_fill(&h, AVA_DEMO_SPEC_ID, AVA_DEMO_SPEC_HASH, AVA_DEMO_SPEC_NAME,
                 static_cast<uint64_t>(getpid()), "test");
  if (round_trip(*ch, message(AVA_MSG_HELLO, 0, &h, sizeof h, 0)) != AVA_OK)
    return 2;

  ava_demo_demo_obj_read_call read{};
  read.data.flags = AVA_BUF_PRESENT | AVA_BUF_IN;
  read.data.length = 8;
  read.size = 8;
  const uint8_t zeros[32] = {};
  struct Case {
    const char *what;
    std::vector<uint8_t> msg;
    int want;
  };
  const Case cases[] = {
      {"unknown function", message(AVA_MSG_CALL, AVA_DEMO_NFUNCS + 7, zeros, 8, 0), AVA_E_FUNC},
      {"argument block too large", message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, zeros, 16, 0),
       AVA_E_LENGTH},
      {"input bytes for an output buffer",
       message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_READ, &read, sizeof read, 16), AVA_E_PROTO},
  };
  int failures = 0;
  for (const Case &c : cases) {
    const int status = round_trip(*ch, c.msg);
    std::printf("%s: status %d%s\n", c.what, status, status == c.want ? "" : " (unexpected)");
    failures += status != c.want;
  }
  ava_demo_demo_version_call version{};
  int64_t ret = 0;
  const int status = round_trip(
      *ch, message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, &version, sizeof version, 0), &ret);
  std::printf("good call: status %d, version %lld\n", status, static_cast<long long>(ret));
  failures += status != AVA_OK || ret != 10203;
  return failures == 0 ? 0 : 1;
}
