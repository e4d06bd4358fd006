// SPDX-License-Identifier: MIT
// How a call is put on the wire: header fields, buffer descriptors, payload
// padding with zero guard bytes, absent buffers, and the limits checked
// before anything is sent (count * size overflow, max_message).
#include <criterion/criterion.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_guest_support.hpp"

using guest_fake::FakeWorker;
using guest_fake::kHdr;
using guest_fake::Seen;
using guest_fake::StderrCapture;
using namespace wtest_guest;

namespace {

constexpr uint32_t kEcho = AVA_WTEST_FN_WT_ECHO;

// An argument block of the runtime tests' own, sent as a call of wt_echo.
struct SixBuffers {
  ava_buf_desc b[6];
  uint64_t tag;
};

void serve_empty_replies(FakeWorker &w, int n) {
  for (int i = 0; i < n; ++i) {
    Seen call;
    if (!w.expect(AVA_MSG_CALL, &call)) {
      return;
    }
    w.reply(call, nullptr, 0);
  }
  w.wait_goodbye();
}

void serve_echo(FakeWorker &w, int n) {
  for (int i = 0; i < n; ++i) {
    Seen call;
    if (!w.expect(AVA_MSG_CALL, &call)) {
      return;
    }
    ava_wtest_wt_echo_reply r{};
    r.ret = 1;
    w.reply(call, &r, sizeof r);
  }
  w.wait_goodbye();
}

bool desc_is(const ava_buf_desc &d, uint64_t offset, uint64_t length, uint32_t flags) {
  return d.offset == offset && d.length == length && d.flags == flags && d.reserved == 0;
}

} // namespace

Test(guest_marshal, header_and_buffer_layout) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) { serve_empty_replies(fw, 2); });

  struct ava_call c;
  SixBuffers a;
  std::memset(&a, 0xee, sizeof a);
  a.tag = 0x1122334455667788ull;
  const char five[] = "abcde";
  uint32_t inout[2] = {0xa1a2a3a4, 0xb1b2b3b4};
  uint32_t out[3];
  const void *reply;
  cr_assert_eq(ava_call_begin(&c, spec(), kEcho, AVA_F_SYNC), 0);
  cr_assert_eq(ava_call_put_buffer(&c, &a.b[0], "", 0, 1, AVA_BUF_IN), 0);
  cr_assert_eq(ava_call_put_buffer(&c, &a.b[1], five, 5, 1, AVA_BUF_IN), 0);
  cr_assert_eq(ava_call_put_buffer(&c, &a.b[2], inout, 2, 4, AVA_BUF_IN | AVA_BUF_OUT), 0);
  cr_assert_eq(ava_call_put_buffer(&c, &a.b[3], out, 3, 4, AVA_BUF_OUT), 0);
  cr_assert_eq(ava_call_put_buffer(&c, &a.b[4], nullptr, 10, 1, AVA_BUF_IN), 0);
  cr_assert_eq(ava_call_put_buffer(&c, &a.b[5], nullptr, 10, 1, AVA_BUF_OUT), 0);
  cr_expect(desc_is(a.b[0], 0, 0, AVA_BUF_PRESENT | AVA_BUF_IN));
  cr_expect(desc_is(a.b[1], 8, 5, AVA_BUF_PRESENT | AVA_BUF_IN));
  cr_expect(desc_is(a.b[2], 16, 8, AVA_BUF_PRESENT | AVA_BUF_IN | AVA_BUF_OUT));
  cr_expect(desc_is(a.b[3], 0, 12, AVA_BUF_PRESENT | AVA_BUF_OUT));
  cr_expect(desc_is(a.b[4], 0, 0, 0));
  cr_expect(desc_is(a.b[5], 0, 0, 0));
  cr_assert_eq(ava_call_invoke(&c, &a, sizeof a, &reply, 0), 0);
  cr_expect_not_null(reply);
  ava_call_end(&c);

  cr_assert_eq(ava_call_begin(&c, spec(), AVA_WTEST_FN_WT_FINISH, AVA_F_SYNC), 0);
  cr_assert_eq(ava_call_invoke(&c, nullptr, 0, &reply, 0), 0);
  ava_call_end(&c);
  ava_guest_shutdown(spec());
  w.join();
  cr_assert_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());

  std::vector<Seen> seen = w.seen();
  cr_assert_eq(seen.size(), 4u, "HELLO, two CALLs, GOODBYE");
  const Seen &hello = seen[0];
  cr_expect_eq(hello.hdr.kind, AVA_MSG_HELLO);
  cr_expect_eq(hello.hdr.args_len, sizeof(ava_hello));
  ava_hello h;
  std::memcpy(&h, hello.args(), sizeof h);
  cr_expect_str_eq(h.spec_name, "wtest");
  cr_expect_eq(h.spec_id, AVA_WTEST_SPEC_ID);
  cr_expect_eq(h.spec_hash, AVA_WTEST_SPEC_HASH);
  cr_expect_eq(h.pid, static_cast<uint64_t>(getpid()));

  const Seen &call = seen[1];
  cr_expect_eq(call.hdr.magic, AVA_MSG_MAGIC);
  cr_expect_eq(call.hdr.abi_version, AVA_ABI_VERSION);
  cr_expect_eq(call.hdr.kind, AVA_MSG_CALL);
  cr_expect_eq(call.hdr.spec_id, AVA_WTEST_SPEC_ID);
  cr_expect_eq(call.hdr.func_id, kEcho);
  cr_expect_eq(call.hdr.flags, AVA_F_SYNC);
  cr_expect_eq(call.hdr.status, 0);
  cr_expect_eq(call.hdr.reserved, 0u);
  cr_expect_eq(call.hdr.thread_id, static_cast<uint64_t>(gettid()));
  cr_expect_eq(call.hdr.args_len, sizeof a);
  cr_expect_eq(call.hdr.total_len, kHdr + sizeof a + 32);
  cr_expect_eq(std::memcmp(call.args(), &a, sizeof a), 0, "the argument block as given");
  uint8_t expected[32] = {};
  std::memcpy(expected + 8, five, 5);
  std::memcpy(expected + 16, inout, 8);
  cr_expect_eq(call.payload_len(), sizeof expected);
  cr_expect_eq(std::memcmp(call.payload(), expected, sizeof expected), 0,
               "items at their offsets, each followed by zero padding");

  const Seen &next = seen[2];
  cr_expect_eq(next.hdr.seq, call.hdr.seq + 1, "per-thread sequence");
  cr_expect_neq(next.hdr.call_id, call.hdr.call_id);
  cr_expect_eq(next.hdr.args_len, 0u);
  cr_expect_eq(next.hdr.total_len, kHdr);
  cr_expect_eq(seen[3].hdr.kind, AVA_MSG_GOODBYE);
}

// A failed step makes the rest of the call no-ops; nothing is sent.
Test(guest_marshal, size_overflow_fails_before_sending) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) { serve_echo(fw, 1); });
  StderrCapture err;
  struct ava_call c;
  SixBuffers a;
  std::memset(&a, 0, sizeof a);
  const void *reply = nullptr;
  uint8_t byte = 0;
  cr_assert_eq(ava_call_begin(&c, spec(), kEcho, AVA_F_SYNC), 0);
  cr_expect_eq(ava_call_put_buffer(&c, &a.b[0], &byte, UINT64_MAX / 2, 4, AVA_BUF_IN), -1);
  cr_expect_eq(c.failed, 1);
  cr_expect_eq(ava_call_put_buffer(&c, &a.b[1], &byte, 1, 1, AVA_BUF_IN), -1);
  cr_expect_eq(ava_call_callback(&c, 1, reinterpret_cast<void (*)(void)>(&serve_echo), nullptr,
                                 AVA_LIFETIME_CALL, 0),
               0u);
  cr_expect_eq(ava_call_invoke(&c, &a, sizeof a, &reply, 0), -1);
  cr_expect_eq(ava_call_get_buffer(&c, &a.b[0], &byte, 1), -1);
  ava_call_end(&c);
  ava_call_end(&c);

  char out[4];
  cr_expect_eq(wt_echo(obj(1), "x", 1, out, sizeof out), 1, "the next call is the first one sent");
  ava_guest_shutdown(spec());
  w.join();
  std::string log = err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  cr_expect(log.find("ava: wt_echo: a buffer of 9223372036854775807 elements of 4 bytes is too "
                     "large\n") != std::string::npos,
            "%s", log.c_str());
  cr_expect_eq(guest_fake::count_of(log, "\n"), 1, "one line for one failure:\n%s", log.c_str());
}

// Misuse by generated code is refused with a message, not a crash.
Test(guest_marshal, invalid_call_setup) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) { serve_echo(fw, 0); });
  StderrCapture err;
  struct ava_call c;
  ava_buf_desc d;
  uint8_t byte = 0;
  cr_expect_eq(ava_call_begin(&c, spec(), AVA_WTEST_NFUNCS, AVA_F_SYNC), -1, "function id too big");
  ava_call_end(&c);
  cr_expect_eq(ava_call_begin(&c, spec(), kEcho, AVA_F_SYNC | AVA_F_ASYNC), -1);
  ava_call_end(&c);
  cr_expect_eq(ava_call_begin(&c, spec(), kEcho, 0x80), -1);
  ava_call_end(&c);
  cr_expect_eq(ava_call_begin(&c, nullptr, 0, AVA_F_SYNC), -1);
  ava_call_end(&c);
  cr_assert_eq(ava_call_begin(&c, spec(), kEcho, AVA_F_SYNC), 0);
  // No direction (the spec's conditions ruled both out): sent as absent.
  std::memset(&d, 0xff, sizeof d);
  cr_expect_eq(ava_call_put_buffer(&c, &d, &byte, 1, 1, 0), 0);
  cr_expect(desc_is(d, 0, 0, 0));
  cr_expect_eq(ava_call_put_buffer(&c, &d, &byte, 1, 1, 0x8), -1, "unknown direction bits");
  ava_call_end(&c);
  cr_assert_eq(ava_call_begin(&c, spec(), kEcho, AVA_F_SYNC), 0);
  cr_expect_eq(
      ava_call_callback(&c, 1, reinterpret_cast<void (*)(void)>(&serve_echo), nullptr, 9, 0), 0u,
      "unknown lifetime");
  cr_expect_eq(c.failed, 1);
  ava_call_end(&c);
  ava_guest_shutdown(spec());
  w.join();
  std::string log = err.finish();
  const std::string outside =
      "internal error: function id " + std::to_string(AVA_WTEST_NFUNCS) + " is outside the spec";
  cr_expect(log.find(outside) != std::string::npos, "%s", log.c_str());
  cr_expect(log.find("invalid call flags") != std::string::npos, "%s", log.c_str());
  cr_expect(log.find("invalid buffer direction") != std::string::npos, "%s", log.c_str());
  cr_expect(log.find("invalid callback lifetime") != std::string::npos, "%s", log.c_str());
}

Test(guest_marshal, max_message_enforced_before_sending) {
  FakeWorker w;
  w.configure_guest();
  FILE *f = std::fopen(w.config_path().c_str(), "a");
  cr_assert_not_null(f);
  std::fprintf(f, "max_message = 4096\n");
  std::fclose(f);
  w.start([](FakeWorker &fw) { serve_echo(fw, 1); });
  StderrCapture err;
  std::vector<char> big(8000, 'b');
  char out[4];
  cr_expect_eq(wt_echo(obj(1), big.data(), big.size(), out, sizeof out), kErr);
  cr_expect_eq(wt_echo(obj(1), "small", 6, out, sizeof out), 1);
  ava_guest_shutdown(spec());
  w.join();
  std::string log = err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  cr_expect(log.find("above the limit of 4096 bytes (max_message)") != std::string::npos, "%s",
            log.c_str());
}
