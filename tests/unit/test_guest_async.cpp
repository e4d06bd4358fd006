// SPDX-License-Identifier: MIT
// Async calls: they are sent and return without waiting for the worker, and
// a failure the worker reports later (in ava_reply_common of a sync reply)
// surfaces through ava_call_take_async_error, once.
#include <criterion/criterion.h>
#include <unistd.h>

#include <cstring>

#include "test_guest_support.hpp"

using guest_fake::FakeWorker;
using guest_fake::Seen;
using guest_fake::StderrCapture;
using namespace wtest_guest;

namespace {

guest_fake::Latch g_latch;

// Answers the next CALL, which must be the sync call func, with ret.
template <class Reply>
void reply_to(FakeWorker &w, uint32_t func, int32_t ret, ava_reply_common common = {}) {
  Seen call;
  if (!w.expect(AVA_MSG_CALL, &call) || call.hdr.func_id != func) {
    w.fail("expected function " + std::to_string(func));
    return;
  }
  if ((call.hdr.flags & AVA_F_SYNC) == 0) {
    w.fail("function " + std::to_string(func) + " must be sync");
  }
  Reply r{};
  r.ret = ret;
  w.reply(call, &r, sizeof r, nullptr, 0, common);
}

// wt_finish returns wt_status: a deferred error of that class replaces its WT_OK.
void reply_finish(FakeWorker &w, int32_t ret, ava_reply_common common = {}) {
  reply_to<ava_wtest_wt_finish_reply>(w, AVA_WTEST_FN_WT_FINISH, ret, common);
}

} // namespace

// The worker reads nothing until the guest has returned from its async
// calls: if an async call waited for the worker, this test would fail (the
// latch has a bound) rather than pass.
Test(guest_async, async_calls_do_not_wait) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    if (!g_latch.wait()) {
      fw.fail("the guest blocked in async calls");
      return;
    }
    uint64_t last_seq = 0;
    for (uint64_t i = 0; i < 3; ++i) {
      Seen call;
      if (!fw.expect(AVA_MSG_CALL, &call)) {
        return;
      }
      ava_wtest_wt_async_write_call a;
      std::memcpy(&a, call.args(), sizeof a);
      if (call.hdr.func_id != AVA_WTEST_FN_WT_ASYNC_WRITE || call.hdr.flags != AVA_F_ASYNC ||
          call.hdr.args_len != sizeof a || a.obj != i + 1 || call.hdr.thread_id == 0 ||
          (i > 0 && call.hdr.seq != last_seq + 1)) {
        fw.fail("async CALL header or arguments wrong");
      }
      // The bytes as they were when the call returned, not as later overwritten.
      if (a.data.length != 4 || a.size != 4 || call.payload_len() != 8 ||
          std::memcmp(call.payload(), "abc", 4) != 0) {
        fw.fail("async payload wrong");
      }
      last_seq = call.hdr.seq;
    }
    reply_finish(fw, 3);
    fw.wait_goodbye();
  });
  for (uint64_t i = 0; i < 3; ++i) {
    char data[4] = "abc";
    cr_assert_eq(wt_async_write(obj(i + 1), data, sizeof data), WT_OK);
    std::memset(data, 'X', sizeof data);
  }
  g_latch.release();
  cr_expect_eq(wt_finish(), 3);
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}

// A deferred async error comes with the next sync reply and replaces that
// call's result once; the call after it sees the normal result again.
Test(guest_async, deferred_error_surfaces_once) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    Seen put;
    fw.expect(AVA_MSG_CALL, &put);
    ava_reply_common common = {};
    common.async_error_class = kStatusClass;
    common.async_error_value = -7;
    common.async_error_func = AVA_WTEST_FN_WT_ASYNC_WRITE;
    reply_finish(fw, WT_OK, common);
    reply_finish(fw, WT_OK);
    fw.wait_goodbye();
  });
  char data[4] = "abc";
  cr_assert_eq(wt_async_write(obj(1), data, sizeof data), WT_OK,
               "async calls return success at once");
  cr_expect_eq(wt_finish(), -7, "the async failure surfaces at the next sync call");
  cr_expect_eq(wt_finish(), WT_OK, "and only once");
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}

// An async error a call cannot return (another return class, or a failed
// call) is kept for the next call of this thread that can.
Test(guest_async, deferred_error_waits_for_a_matching_call) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    ava_reply_common common = {};
    common.async_error_class = kStatusClass;
    common.async_error_value = -8;
    // Reported to a call of another class (wt_other_status), then kept past one
    // of none (int32_t) for the next wt_status call.
    reply_to<ava_wtest_wt_other_ping_reply>(fw, AVA_WTEST_FN_WT_OTHER_PING, WT_OK, common);
    reply_to<ava_wtest_wt_get_tag_reply>(fw, AVA_WTEST_FN_WT_GET_TAG, WT_OK);
    reply_finish(fw, WT_OK); // the error surfaces here
    // A failed call's reply may carry an async error too.
    Seen call;
    fw.expect(AVA_MSG_CALL, &call);
    common.async_error_value = -9;
    ava_msg_hdr hdr = FakeWorker::reply_header(call);
    hdr.status = AVA_E_HANDLE;
    fw.send(hdr, &common, sizeof common, nullptr, 0);
    reply_finish(fw, WT_OK);
    fw.wait_goodbye();
  });
  StderrCapture err;
  cr_expect_eq(wt_other_ping(reinterpret_cast<wt_other>(uintptr_t{4})), WT_OK);
  cr_expect_eq(wt_get_tag(), WT_OK);
  cr_expect_eq(wt_finish(), -8);
  cr_expect_eq(wt_finish(), kErr, "the worker refused this call");
  cr_expect_eq(wt_finish(), -9);
  ava_guest_shutdown(spec());
  w.join();
  err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}

// Async calls on a dead connection fail instead of hanging or crashing.
Test(guest_async, async_after_lost_connection_fails) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    reply_finish(fw, 1);
    fw.drop();
  });
  StderrCapture err;
  cr_assert_eq(wt_finish(), 1);
  w.join();
  char data[4] = "abc";
  // The first send may still fit in the socket buffer before the guest
  // notices; within a bounded number of calls every one must fail.
  int32_t ret = 0;
  for (int i = 0; i < 10000 && ret != kErr; ++i) {
    ret = wt_async_write(obj(1), data, sizeof data);
    if (ret != kErr) {
      usleep(1000);
    }
  }
  cr_expect_eq(ret, kErr);
  cr_expect_eq(wt_async_write(obj(1), data, sizeof data), kErr);
  cr_expect_eq(wt_finish(), kErr);
  ava_guest_shutdown(spec());
  std::string log = err.finish();
  cr_expect_eq(guest_fake::count_of(log, "lost connection to the wtest worker"), 1, "%s",
               log.c_str());
}
