// SPDX-License-Identifier: MIT
// Async calls: they are sent and return without waiting for the worker, and
// a failure the worker reports later (in ava_reply_common of a sync reply)
// surfaces through ava_call_take_async_error, once.
#include <criterion/criterion.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "test_guest_support.hpp"

using gtest_fake::FakeWorker;
using gtest_fake::Seen;
using gtest_fake::StderrCapture;
using namespace gtest_spec;

namespace {

// Lets the worker thread wait until the test thread got somewhere.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  bool wait() {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return open; });
  }
};

Latch g_latch;

constexpr uint32_t kOtherClass = 2;

// A sync call whose function has return class ret_class (as a generated
// stub of such a function would take it).
int32_t version_of_class(uint32_t ret_class) {
  struct ava_call c;
  const void *rp;
  int64_t value;
  int32_t ret;
  if (ava_call_begin(&c, &kSpec, kVersion, AVA_F_SYNC) != 0 ||
      ava_call_invoke(&c, nullptr, 0, &rp, sizeof(StatusReply)) != 0) {
    ava_call_end(&c);
    return kErr;
  }
  ret = static_cast<const StatusReply *>(rp)->ret;
  if (ava_call_take_async_error(&c, ret_class, &value)) {
    ret = static_cast<int32_t>(value);
  }
  ava_call_end(&c);
  return ret;
}

void reply_version(FakeWorker &w, int32_t ret, ava_reply_common common = {}) {
  Seen call;
  if (!w.expect(AVA_MSG_CALL, &call) || call.hdr.func_id != kVersion) {
    w.fail("expected t_version");
    return;
  }
  if ((call.hdr.flags & AVA_F_SYNC) == 0) {
    w.fail("t_version must be sync");
  }
  StatusReply r = {ret, 0};
  w.reply(call, &r, sizeof r, nullptr, 0, common);
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
    for (int i = 0; i < 3; ++i) {
      Seen call;
      if (!fw.expect(AVA_MSG_CALL, &call)) {
        return;
      }
      AsyncPutArgs a;
      std::memcpy(&a, call.args(), sizeof a);
      if (call.hdr.func_id != kAsyncPut || call.hdr.flags != AVA_F_ASYNC || a.value != i ||
          call.hdr.thread_id == 0 || (i > 0 && call.hdr.seq != last_seq + 1)) {
        fw.fail("async CALL header or arguments wrong");
      }
      // The bytes as they were when the call returned, not as later overwritten.
      if (a.data.length != 4 || call.payload_len() != 8 ||
          std::memcmp(call.payload(), "abc", 4) != 0) {
        fw.fail("async payload wrong");
      }
      last_seq = call.hdr.seq;
    }
    reply_version(fw, 3);
    fw.wait_goodbye();
  });
  for (int i = 0; i < 3; ++i) {
    char data[4] = "abc";
    cr_assert_eq(t_async_put(i, data, sizeof data), 0);
    std::memset(data, 'X', sizeof data);
  }
  g_latch.release();
  cr_expect_eq(t_version(), 3);
  ava_guest_shutdown(&kSpec);
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
    common.async_error_func = kAsyncPut;
    reply_version(fw, 3, common);
    reply_version(fw, 3);
    fw.wait_goodbye();
  });
  char data[4] = "abc";
  cr_assert_eq(t_async_put(1, data, sizeof data), 0, "async calls return success at once");
  cr_expect_eq(t_version(), -7, "the async failure surfaces at the next sync call");
  cr_expect_eq(t_version(), 3, "and only once");
  ava_guest_shutdown(&kSpec);
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
    reply_version(fw, 4, common); // taken by a call of another class
    reply_version(fw, 5);         // the error surfaces here
    // A failed call's reply may carry an async error too.
    Seen call;
    fw.expect(AVA_MSG_CALL, &call);
    common.async_error_value = -9;
    ava_msg_hdr hdr = FakeWorker::reply_header(call);
    hdr.status = AVA_E_HANDLE;
    fw.send(hdr, &common, sizeof common, nullptr, 0);
    reply_version(fw, 6);
    fw.wait_goodbye();
  });
  StderrCapture err;
  cr_expect_eq(version_of_class(kOtherClass), 4);
  cr_expect_eq(t_version(), -8);
  cr_expect_eq(t_version(), kErr, "the worker refused this call");
  cr_expect_eq(t_version(), -9);
  ava_guest_shutdown(&kSpec);
  w.join();
  err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}

// Async calls on a dead connection fail instead of hanging or crashing.
Test(guest_async, async_after_lost_connection_fails) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    reply_version(fw, 1);
    fw.drop();
  });
  StderrCapture err;
  cr_assert_eq(t_version(), 1);
  w.join();
  char data[4] = "abc";
  // The first send may still fit in the socket buffer before the guest
  // notices; within a bounded number of calls every one must fail.
  int32_t ret = 0;
  for (int i = 0; i < 10000 && ret != kErr; ++i) {
    ret = t_async_put(i, data, sizeof data);
    if (ret != kErr) {
      usleep(1000);
    }
  }
  cr_expect_eq(ret, kErr);
  cr_expect_eq(t_async_put(0, data, sizeof data), kErr);
  cr_expect_eq(t_version(), kErr);
  ava_guest_shutdown(&kSpec);
  std::string log = err.finish();
  cr_expect_eq(gtest_fake::count_of(log, "lost connection to the gtest worker"), 1, "%s",
               log.c_str());
}
