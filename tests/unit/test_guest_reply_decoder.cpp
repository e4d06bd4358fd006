// SPDX-License-Identifier: MIT
// The guest distrusts its worker: a table of malformed or failed replies,
// each answered by a fake worker to a generated stub (wt_echo). The stub must
// return its error value without crashing or hanging; where the stream
// itself is intact the next call works, where it is not the next call fails
// at once. Each case runs in its own process (Criterion parameters).
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <climits>
#include <cstring>
#include <string>

#include "test_guest_support.hpp"

using guest_fake::FakeWorker;
using guest_fake::kHdr;
using guest_fake::Seen;
using guest_fake::StderrCapture;
using namespace wtest_guest;

namespace {

enum class Bad {
  None,
  WrongKind,
  HelloAckKind,
  WrongCallId,
  WrongFuncId,
  WrongSpecId,
  ReservedSet,
  ShortArgs,
  NoCommon,
  ArgsBeyondTotal,
  DescBeyondPayload,
  DescOffsetHuge,
  DescOverCapacity,
  DescUnknownFlags,
  AbsentWithLength,
  StatusHandle,
  StatusNomem,
  StatusUnsupported,
  StatusPositive,
  StatusIntMin,
  PeerClose,
  Garbage,
  TruncatedBody,
  Goodbye,
  LateReply,
};

struct Case {
  Bad bad;
  bool next_ok;    // the connection survives and the next call succeeds
  int timeout_ms;  // call_timeout_ms for the guest
  const char *log; // expected in stderr (static strings only)
};

constexpr char kIn[] = "hello";
constexpr char kOut[] = "olleh";
constexpr int32_t kGoodRet = 42;
using EchoReply = ava_wtest_wt_echo_reply;

// A correct reply to an echo call: "olleh" in the out buffer, ret 42.
void good_reply(FakeWorker &w, const Seen &call) {
  EchoReply r{};
  r.out = {0, sizeof kOut, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  r.ret = kGoodRet;
  uint8_t payload[8] = {};
  std::memcpy(payload, kOut, sizeof kOut);
  w.reply(call, &r, sizeof r, payload, sizeof payload);
}

void bad_reply(FakeWorker &w, const Seen &call, Bad bad) {
  EchoReply r{};
  r.out = {0, sizeof kOut, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  r.ret = kGoodRet;
  uint8_t payload[64] = {};
  std::memcpy(payload, kOut, sizeof kOut);
  uint64_t payload_len = 8;
  ava_reply_common common = {};
  std::vector<uint8_t> args(sizeof common + sizeof r);
  std::memcpy(args.data() + sizeof common, &r, sizeof r);
  ava_msg_hdr hdr = FakeWorker::reply_header(call);

  switch (bad) {
  case Bad::None:
    good_reply(w, call);
    return;
  case Bad::WrongKind:
    hdr.kind = AVA_MSG_CALL;
    break;
  case Bad::HelloAckKind:
    hdr.kind = AVA_MSG_HELLO_ACK;
    break;
  case Bad::WrongCallId:
    hdr.call_id += 1000;
    break;
  case Bad::WrongFuncId:
    hdr.func_id = AVA_WTEST_FN_WT_FINISH;
    break;
  case Bad::WrongSpecId:
    hdr.spec_id += 1;
    break;
  case Bad::ReservedSet:
    hdr.reserved = 1;
    break;
  case Bad::ShortArgs:
    args.resize(sizeof common + sizeof r - 4);
    break;
  case Bad::NoCommon:
    args.resize(8);
    break;
  case Bad::ArgsBeyondTotal:
    hdr.args_len = static_cast<uint32_t>(args.size() + payload_len + 8);
    break;
  case Bad::DescBeyondPayload:
    r.out.offset = 4;
    r.out.length = 6;
    break;
  case Bad::DescOffsetHuge:
    r.out.offset = UINT64_MAX - 2;
    r.out.length = 6;
    break;
  case Bad::DescOverCapacity:
    r.out.length = 48; // the guest offered 16
    payload_len = 48;
    break;
  case Bad::DescUnknownFlags:
    r.out.flags |= 0x100;
    break;
  case Bad::AbsentWithLength:
    r.out.flags = 0;
    break;
  case Bad::StatusHandle:
    hdr.status = AVA_E_HANDLE;
    args.clear();
    payload_len = 0;
    break;
  case Bad::StatusNomem:
    hdr.status = AVA_E_NOMEM;
    break;
  case Bad::StatusUnsupported:
    hdr.status = AVA_E_UNSUPPORTED;
    args.clear();
    payload_len = 0;
    break;
  case Bad::StatusPositive:
    hdr.status = 5;
    break;
  case Bad::StatusIntMin:
    hdr.status = INT_MIN;
    break;
  case Bad::PeerClose:
    w.drop();
    return;
  case Bad::Garbage: {
    uint8_t junk[256];
    for (size_t i = 0; i < sizeof junk; ++i) {
      junk[i] = static_cast<uint8_t>(i * 37 + 11);
    }
    w.write_raw(junk, sizeof junk);
    return;
  }
  case Bad::TruncatedBody: {
    ava_msg_hdr h = FakeWorker::reply_header(call);
    h.total_len = kHdr + 200;
    h.args_len = 100;
    w.write_raw(&h, sizeof h);
    w.write_raw(payload, 10);
    w.drop();
    return;
  }
  case Bad::Goodbye: {
    ava_msg_hdr h = guest_fake::make_header(AVA_MSG_GOODBYE, call.hdr.spec_id, kHdr);
    w.send(h, nullptr, 0, nullptr, 0);
    return;
  }
  case Bad::LateReply:
    // Answered only after the guest gave up and sent its next call.
    return;
  }
  if (args.size() >= sizeof common + sizeof r) {
    std::memcpy(args.data() + sizeof common, &r, sizeof r);
  }
  w.send(hdr, args.data(), static_cast<uint32_t>(args.size()), payload, payload_len);
}

Case kCases[] = {
    {Bad::None, true, 10000, ""},
    {Bad::WrongKind, false, 10000, "lost connection to the wtest worker"},
    {Bad::HelloAckKind, false, 10000, "unexpected message of kind 2"},
    {Bad::WrongCallId, false, 10000, "which is not waiting for one"},
    {Bad::WrongFuncId, true, 10000, "wt_echo: invalid reply from the worker"},
    {Bad::WrongSpecId, true, 10000, "invalid reply from the worker: reply for spec 78"},
    {Bad::ReservedSet, true, 10000, "reserved"},
    {Bad::ShortArgs, true, 10000, "shorter than the"},
    {Bad::NoCommon, true, 10000, "shorter than the"},
    {Bad::ArgsBeyondTotal, true, 10000, "exceeds the"},
    {Bad::DescBeyondPayload, true, 10000, "outside the reply payload"},
    {Bad::DescOffsetHuge, true, 10000, "outside the reply payload"},
    {Bad::DescOverCapacity, true, 10000, "bytes the guest provided"},
    {Bad::DescUnknownFlags, true, 10000, "unknown flags"},
    {Bad::AbsentWithLength, true, 10000, "absent returned buffer"},
    {Bad::StatusHandle, true, 10000,
     "wt_echo: the worker reported: unknown or wrongly typed handle (AVA_E_HANDLE)"},
    {Bad::StatusNomem, true, 10000, "(AVA_E_NOMEM)"},
    {Bad::StatusUnsupported, true, 10000, "(AVA_E_UNSUPPORTED)"},
    {Bad::StatusPositive, true, 10000, "invalid status 5"},
    {Bad::StatusIntMin, true, 10000, "invalid status"},
    {Bad::PeerClose, false, 10000, "lost connection to the wtest worker (unix:"},
    {Bad::Garbage, false, 10000, "lost connection to the wtest worker"},
    {Bad::TruncatedBody, false, 10000, "lost connection to the wtest worker"},
    {Bad::Goodbye, false, 10000, "the worker said goodbye"},
    {Bad::LateReply, true, 200, "within 200 ms (call_timeout_ms)"},
};

} // namespace

constexpr size_t kNumCases = sizeof kCases / sizeof kCases[0];

// Parameters are plain indices: Criterion hands them to another process.
ParameterizedTestParameters(guest_reply_decoder, malformed) {
  static size_t indices[kNumCases];
  for (size_t i = 0; i < kNumCases; ++i) {
    indices[i] = i;
  }
  return cr_make_param_array(size_t, indices, kNumCases);
}

ParameterizedTest(size_t *index, guest_reply_decoder, malformed) {
  cr_assert_lt(*index, kNumCases);
  const Case tc = kCases[*index];
  FakeWorker w;
  w.configure_guest(tc.timeout_ms);
  w.start([tc](FakeWorker &fw) {
    Seen call;
    if (!fw.expect(AVA_MSG_CALL, &call)) {
      return;
    }
    bad_reply(fw, call, tc.bad);
    if (!tc.next_ok) {
      fw.wait_goodbye();
      return;
    }
    Seen next;
    if (!fw.expect(AVA_MSG_CALL, &next)) {
      return;
    }
    if (tc.bad == Bad::LateReply) {
      good_reply(fw, call);
    }
    good_reply(fw, next);
    if (!fw.wait_goodbye()) {
      fw.fail("no GOODBYE at shutdown");
    }
  });

  StderrCapture err;
  char out[16];
  std::memset(out, 0, sizeof out);
  int32_t ret = wt_echo(obj(5), kIn, sizeof kIn, out, sizeof out);
  if (tc.bad == Bad::None) {
    cr_expect_eq(ret, kGoodRet);
    cr_expect_str_eq(out, kOut);
  } else {
    cr_expect_eq(ret, kErr, "a bad reply must fail the call, got %d", ret);
    if (tc.bad == Bad::DescOverCapacity) {
      cr_expect_eq(out[0], 0, "nothing may be copied from a rejected buffer");
    }
  }

  std::memset(out, 0, sizeof out);
  ret = wt_echo(obj(6), kIn, sizeof kIn, out, sizeof out);
  if (tc.next_ok) {
    cr_expect_eq(ret, kGoodRet, "the next call must work, got %d", ret);
    cr_expect_str_eq(out, kOut);
  } else {
    cr_expect_eq(ret, kErr, "a broken connection must fail later calls, got %d", ret);
  }

  ava_guest_shutdown(spec());
  w.join();
  std::string log = err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  if (tc.log[0] != '\0') {
    cr_expect(log.find(tc.log) != std::string::npos, "expected '%s' in stderr:\n%s", tc.log,
              log.c_str());
  } else {
    cr_expect_eq(log, "", "unexpected output:\n%s", log.c_str());
  }
  for (size_t pos = 0; pos < log.size();) {
    size_t end = log.find('\n', pos);
    cr_expect(log.compare(pos, 5, "ava: ") == 0, "every line starts with 'ava: ':\n%s",
              log.c_str());
    pos = end == std::string::npos ? log.size() : end + 1;
  }
  cr_expect_leq(guest_fake::count_of(log, "lost connection"), 1, "one message per lost connection");
  if (tc.bad != Bad::None) {
    cr_log_info("case %zu: %s", *index, log.c_str());
  }
}

// Many malformed replies in a row on one connection: the runtime never
// crashes and keeps serving good replies in between.
Test(guest_reply_decoder, many_bad_replies_in_a_row) {
  static const Bad kSurvivable[] = {
      Bad::WrongFuncId,       Bad::ShortArgs,      Bad::NoCommon,         Bad::ArgsBeyondTotal,
      Bad::DescBeyondPayload, Bad::DescOffsetHuge, Bad::DescOverCapacity, Bad::DescUnknownFlags,
      Bad::StatusHandle,      Bad::StatusIntMin};
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    for (Bad bad : kSurvivable) {
      Seen call;
      if (!fw.expect(AVA_MSG_CALL, &call)) {
        return;
      }
      bad_reply(fw, call, bad);
      if (!fw.expect(AVA_MSG_CALL, &call)) {
        return;
      }
      good_reply(fw, call);
    }
    fw.wait_goodbye();
  });
  StderrCapture err;
  for (size_t i = 0; i < sizeof kSurvivable / sizeof kSurvivable[0]; ++i) {
    char out[16] = {};
    cr_expect_eq(wt_echo(obj(1), kIn, sizeof kIn, out, sizeof out), kErr, "case %zu", i);
    cr_expect_eq(wt_echo(obj(1), kIn, sizeof kIn, out, sizeof out), kGoodRet, "case %zu", i);
  }
  ava_guest_shutdown(spec());
  w.join();
  err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}
