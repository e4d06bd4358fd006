// SPDX-License-Identifier: MIT
// The guest side of a policed /dev/ava slot (include/ava/ivshmem.h): sends go
// to a CommandSubmitter (ava.ko) instead of into the ring. A refused sync call
// is answered as the host would answer it, a refused async call is dropped,
// a refused HELLO fails the send, and the messages after a refused one still
// go out. The submitter here is a stand-in with ava.ko's contract; the real
// one is exercised in the QEMU guest (tests/vm/test_vm_kmod.cpp).
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "transport/region_signals.hpp"
#include "transport/shm.hpp"
#include "transport/shm_channel.hpp"
#include "transport/shm_region.hpp"

namespace {

using ava::detail::CommandSubmitter;

constexpr uint32_t kBadFunc = 99;
constexpr uint32_t kSpec = 5;
constexpr uint32_t kUnknownSpec = 7;

// Takes at most per_call messages a call, refuses CALLs of kBadFunc with
// AVA_E_FUNC and a HELLO for kUnknownSpec with AVA_E_UNSUPPORTED.
class FakeKernel final : public CommandSubmitter {
public:
  explicit FakeKernel(int per_call) : per_call_(per_call) {}

  ava::Status submit(const struct iovec *iov, int iovcnt, uint64_t total, uint64_t *taken,
                     int *refused) override {
    ++calls;
    if (fail_with != 0)
      return ava::Status::error(fail_with, "the slot broke");
    std::vector<uint8_t> flat;
    for (int i = 0; i < iovcnt; ++i) {
      const auto *p = static_cast<const uint8_t *>(iov[i].iov_base);
      flat.insert(flat.end(), p, p + iov[i].iov_len);
    }
    cr_assert(flat.size() >= total, "the gather list holds less than total");
    *taken = 0;
    *refused = 0;
    for (int n = 0; n < per_call_ && *taken < total; ++n) {
      ava_msg_hdr hdr;
      std::memcpy(&hdr, flat.data() + *taken, sizeof hdr);
      cr_assert(hdr.total_len >= sizeof hdr && hdr.total_len <= total - *taken,
                "a message that does not fit: the channel handed over a partial one");
      *taken += hdr.total_len;
      const bool bad = (hdr.kind == AVA_MSG_CALL && hdr.func_id == kBadFunc) ||
                       (hdr.kind == AVA_MSG_HELLO && hdr.spec_id == kUnknownSpec);
      if (bad) {
        *refused = hdr.kind == AVA_MSG_HELLO ? AVA_E_UNSUPPORTED : AVA_E_FUNC;
        refused_ids.push_back(hdr.call_id);
        break;
      }
      accepted_ids.push_back(hdr.call_id);
    }
    return ava::Status::ok();
  }

  int calls = 0;
  int fail_with = 0;
  std::vector<uint64_t> accepted_ids;
  std::vector<uint64_t> refused_ids;

private:
  int per_call_;
};

struct Guest {
  FakeKernel *kernel = nullptr;
  std::unique_ptr<ava::detail::ShmChannel> channel;
  int peer_socket = -1;

  explicit Guest(int per_call) {
    ava::ShmOptions options;
    options.ring_bytes = 64 << 10;
    options.heap_bytes = 0;
    ava::detail::UniqueFd fd;
    ava::detail::ShmMapping map;
    ava::detail::RegionLayout layout;
    ava::Status st = ava::detail::create_region(options, &fd, &map, &layout);
    cr_assert(st.is_ok(), "%s", st.message.c_str());
    int sv[2];
    cr_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    peer_socket = sv[1];
    // The submitter belongs to the signals in ava's carriers; here the test
    // keeps it alive as long as the channel.
    owned_ = std::make_unique<FakeKernel>(per_call);
    kernel = owned_.get();
    ava::detail::PolicedRing ring;
    ring.submitter = kernel;
    channel = std::make_unique<ava::detail::ShmChannel>(
        std::move(map), layout, ava::detail::ShmSide::Guest,
        ava::detail::make_futex_signals(ava::detail::UniqueFd(sv[0])), "policed test", 0, ring);
  }
  ~Guest() {
    channel.reset();
    close(peer_socket);
  }

private:
  std::unique_ptr<FakeKernel> owned_;
};

std::vector<uint8_t> message(uint16_t kind, uint32_t spec, uint32_t func, uint64_t call_id,
                             uint32_t flags, uint32_t args_len = 16) {
  std::vector<uint8_t> m(sizeof(ava_msg_hdr) + args_len, 0xab);
  ava_msg_hdr h{};
  h.magic = AVA_MSG_MAGIC;
  h.abi_version = AVA_ABI_VERSION;
  h.kind = kind;
  h.spec_id = spec;
  h.func_id = func;
  h.total_len = m.size();
  h.thread_id = 3;
  h.seq = call_id;
  h.call_id = call_id;
  h.args_len = args_len;
  h.flags = flags;
  std::memcpy(m.data(), &h, sizeof h);
  return m;
}

// The messages in one gather list, each split in two pieces so that the
// channel has to find message ends across pieces.
ava::Status send_all(ava::Channel &ch, const std::vector<std::vector<uint8_t>> &msgs) {
  std::vector<struct iovec> iov;
  for (const auto &m : msgs) {
    iov.push_back({const_cast<uint8_t *>(m.data()), 40});
    iov.push_back({const_cast<uint8_t *>(m.data()) + 40, m.size() - 40});
  }
  return ch.send(iov.data(), static_cast<int>(iov.size()));
}

} // namespace

struct BatchCase {
  int per_call; // messages the fake kernel takes per submit at most
};

ParameterizedTestParameters(policed, refused_calls_are_answered_or_dropped_as_by_the_host) {
  static BatchCase cases[] = {{1}, {2}, {64}};
  return cr_make_param_array(BatchCase, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(BatchCase *c, policed, refused_calls_are_answered_or_dropped_as_by_the_host) {
  Guest g(c->per_call);
  const std::vector<std::vector<uint8_t>> batch = {
      message(AVA_MSG_CALL, kSpec, 1, 1, AVA_F_SYNC),
      message(AVA_MSG_CALL, kSpec, kBadFunc, 2, AVA_F_SYNC),
      message(AVA_MSG_CALL, kSpec, kBadFunc, 3, AVA_F_ASYNC),
      message(AVA_MSG_CALL, kSpec, 4, 4, AVA_F_ASYNC, 200),
      message(AVA_MSG_CALL, kSpec, 5, 5, AVA_F_SYNC),
  };
  ava::Status st = send_all(*g.channel, batch);
  cr_assert(st.is_ok(), "%s", st.message.c_str());
  cr_expect(g.kernel->accepted_ids == (std::vector<uint64_t>{1, 4, 5}),
            "the calls after a refused one were not all handed over");
  cr_expect(g.kernel->refused_ids == (std::vector<uint64_t>{2, 3}));

  // The refused sync call's REPLY, as the worker's send_status builds it.
  ava::MsgBuf reply;
  st = g.channel->recv(reply, 1000);
  cr_assert(st.is_ok(), "%s", st.message.c_str());
  const ava_msg_hdr *h = reply.header();
  cr_expect(h->kind == AVA_MSG_REPLY && h->call_id == 2 && h->func_id == kBadFunc &&
            h->spec_id == kSpec && h->thread_id == 3 && h->status == AVA_E_FUNC);
  cr_expect(h->args_len == sizeof(ava_reply_common) && reply.size() == h->total_len &&
            h->total_len == sizeof(ava_msg_hdr) + sizeof(ava_reply_common));
  // Nothing for the refused async call.
  st = g.channel->recv(reply, 50);
  cr_expect(st.code == AVA_E_TIMEOUT, "a second message (%d): %s", st.code, st.message.c_str());
}

Test(policed, a_refused_hello_fails_the_send_and_names_the_missing_module) {
  Guest g(64);
  ava::Status st =
      send_all(*g.channel, {message(AVA_MSG_HELLO, kUnknownSpec, 0, 0, 0, sizeof(ava_hello))});
  cr_expect(st.code == AVA_E_UNSUPPORTED, "status %d: %s", st.code, st.message.c_str());
  cr_expect(st.message.find("ava_<spec>.ko") != std::string::npos, "%s", st.message.c_str());
}

Test(policed, a_reader_waiting_for_replies_gets_a_refusal_at_once) {
  Guest g(64);
  ava::MsgBuf reply;
  ava::Status got;
  // Generous bound: only a missed wake-up makes the reader wait it out.
  std::thread reader([&] { got = g.channel->recv(reply, 20000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ava::Status st = send_all(*g.channel, {message(AVA_MSG_CALL, kSpec, kBadFunc, 9, AVA_F_SYNC)});
  reader.join();
  cr_assert(st.is_ok(), "%s", st.message.c_str());
  cr_assert(got.is_ok(), "%s", got.message.c_str());
  cr_expect(reply.header()->call_id == 9 && reply.header()->status == AVA_E_FUNC);
}

Test(policed, a_submitter_failure_fails_the_send) {
  Guest g(64);
  g.kernel->fail_with = AVA_E_CLOSED;
  ava::Status st = send_all(*g.channel, {message(AVA_MSG_CALL, kSpec, 1, 1, AVA_F_SYNC)});
  cr_expect(st.code == AVA_E_CLOSED && st.message.find("the slot broke") != std::string::npos,
            "status %d: %s", st.code, st.message.c_str());
}
