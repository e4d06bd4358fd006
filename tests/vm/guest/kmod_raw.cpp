// SPDX-License-Identifier: MIT
// Runs in the guest: claims a /dev/ava slot through the kmod channel and
// sends the demo worker calls no guest library would — an unknown function,
// argument blocks of the wrong size, input bytes for an output buffer — then
// a good call. Prints each status; exits 0 when every bad call was refused
// with the status the spec's command table gives and the good call worked.
// On a policed slot ava.ko refuses them, on any other the host does: the
// statuses are the same.
//
// `kmod_raw --policed-probe` checks a policed claim of /dev/ava by hand: the
// command ring cannot be mapped, AVA_IOC_SUBMIT refuses bad framing, a call
// before HELLO and a HELLO for a spec without a registered table, and the
// guest library's channel reports that HELLO refusal naming the module.
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "ava/ivshmem.h"
#include "demo_wire.h"
#include "transport/channel.hpp"

namespace {

std::vector<uint8_t> message(uint16_t kind, uint32_t func, const void *args, uint32_t len,
                             uint64_t payload) {
  std::vector<uint8_t> m(sizeof(ava_msg_hdr) + len + payload);
  ava_msg_hdr h{};
  h.magic = AVA_MSG_MAGIC;
  h.abi_version = AVA_ABI_VERSION;
  h.kind = kind;
  h.spec_id = AVA_DEMO_SPEC_ID;
  h.func_id = func;
  h.total_len = m.size();
  h.thread_id = 1;
  h.call_id = func + 1;
  h.args_len = len;
  h.flags = kind == AVA_MSG_CALL ? AVA_F_SYNC : 0;
  std::memcpy(m.data(), &h, sizeof h);
  if (len > 0)
    std::memcpy(m.data() + sizeof h, args, len);
  return m;
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

// One AVA_IOC_SUBMIT of m: 0 and *status, or -errno.
int submit(int fd, const std::vector<uint8_t> &m, int *status) {
  iovec iov{const_cast<uint8_t *>(m.data()), m.size()};
  ava_submit sub{};
  sub.iov = reinterpret_cast<uintptr_t>(&iov);
  sub.iovcnt = 1;
  sub.total = m.size();
  if (ioctl(fd, AVA_IOC_SUBMIT, &sub) != 0)
    return -errno;
  *status = sub.status;
  return sub.done == m.size() ? 0 : -ERANGE;
}

int expect(bool ok, const char *what) {
  std::printf("%s: %s\n", what, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

int policed_probe() {
  const int fd = open("/dev/ava", O_RDWR | O_CLOEXEC);
  ava_slot_info info{};
  if (fd < 0 || ioctl(fd, AVA_IOC_SLOT_INFO, &info) != 0) {
    std::perror("kmod_raw: /dev/ava");
    return 2;
  }
  int failures = expect((info.flags & AVA_CLAIM_POLICED) != 0, "claim is policed");
  void *p = mmap(nullptr, info.slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  failures += expect(p == MAP_FAILED && errno == EACCES, "mapping the whole slot is refused");
  p = mmap(nullptr, info.cmd_size, PROT_READ, MAP_SHARED, fd, AVA_REGION_HDR_SIZE);
  failures += expect(p == MAP_FAILED && errno == EACCES, "mapping the command ring is refused");
  p = mmap(nullptr, AVA_REGION_HDR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  failures += expect(p != MAP_FAILED, "mapping the region header works");
  if (p != MAP_FAILED)
    munmap(p, AVA_REGION_HDR_SIZE);

  int status = 0;
  ava_demo_demo_version_call version{};
  std::vector<uint8_t> call =
      message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, &version, sizeof version, 0);
  failures += expect(submit(fd, call, &status) == 0 && status == AVA_E_STATE,
                     "a call before HELLO is refused (AVA_E_STATE)");
  std::vector<uint8_t> garbage = call;
  garbage[0] ^= 0xff;
  failures += expect(submit(fd, garbage, &status) == -EINVAL, "a bad header is -EINVAL");
  ava_hello h{};
  h.spec_hash = 1;
  h.spec_id = 999;
  std::strncpy(h.spec_name, "nosuchspec", sizeof h.spec_name - 1);
  failures += expect(submit(fd, message(AVA_MSG_HELLO, 0, &h, sizeof h, 0), &status) == 0 &&
                         status == AVA_E_UNSUPPORTED,
                     "a HELLO for a spec without a table is refused (AVA_E_UNSUPPORTED)");
  close(fd);

  ava::Address addr;
  std::unique_ptr<ava::Channel> ch;
  ava::Status st = ava::parse_address("kmod:/dev/ava", ava::ChannelKind::Kmod, &addr);
  if (st.is_ok())
    st = ava::connect_channel(addr, 10000, &ch);
  if (st.is_ok()) {
    std::vector<uint8_t> m = message(AVA_MSG_HELLO, 0, &h, sizeof h, 0);
    iovec iov{m.data(), m.size()};
    st = ch->send(&iov, 1);
    std::printf("channel: %s\n", st.message.c_str());
    failures += expect(st.code == AVA_E_UNSUPPORTED, "the channel reports the refused HELLO");
  } else {
    std::fprintf(stderr, "kmod_raw: %s\n", st.message.c_str());
    ++failures;
  }
  return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--policed-probe") == 0)
    return policed_probe();
  ava::Address addr;
  std::unique_ptr<ava::Channel> ch;
  ava::Status st = ava::parse_address("kmod:/dev/ava", ava::ChannelKind::Kmod, &addr);
  if (st.is_ok())
    st = ava::connect_channel(addr, 10000, &ch);
  if (!st.is_ok()) {
    std::fprintf(stderr, "kmod_raw: %s\n", st.message.c_str());
    return 2;
  }
  ava_hello h{};
  h.spec_hash = AVA_DEMO_SPEC_HASH;
  h.pid = static_cast<uint64_t>(getpid());
  h.spec_id = AVA_DEMO_SPEC_ID;
  std::strncpy(h.spec_name, AVA_DEMO_SPEC_NAME, sizeof h.spec_name - 1);
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
