// SPDX-License-Identifier: MIT
// Batching of async calls (shim/batch.*): with AVA_BATCH=1 they wait in the
// guest library, and a call flagged AVA_F_FLUSH (wt_flush, ava_flush in the
// spec) takes them along to the worker at once, in order and ahead of itself,
// without any sync call.
#include <criterion/criterion.h>
#include <stdlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_guest_support.hpp"

using guest_fake::FakeWorker;
using guest_fake::Latch;
using guest_fake::Seen;
using namespace wtest_guest;

namespace {

// The batch's time bound: far beyond every wait below (the most AVA_BATCH_US
// allows), so only a flush can have sent the batch in time.
constexpr const char *kBatchUs = "10000000";
// How long the worker checks that no async call left before the flush.
constexpr int kQuietMs = 300;
// Bound for the flushed calls to arrive.
constexpr int kFlushedMs = 3000;
constexpr uint64_t kAsyncCalls = 3;

Latch g_sent;     // the guest made its async calls
Latch g_quiet;    // the worker saw none of them arrive
Latch g_received; // the worker has had its chance to receive the flushed calls

void expect_flushed_calls(FakeWorker &w) {
  if (!g_sent.wait()) {
    w.fail("the guest blocked in async calls");
    return;
  }
  Seen early;
  if (w.recv(&early, kQuietMs)) {
    w.fail("an async call left the batch before the flush");
    return;
  }
  if (w.last_recv_status() != AVA_E_TIMEOUT) {
    w.fail("the connection broke while the calls waited in the batch");
    return;
  }
  g_quiet.release();
  uint64_t last_seq = 0;
  for (uint64_t i = 0; i < kAsyncCalls; ++i) {
    Seen call;
    if (!w.expect(AVA_MSG_CALL, &call, kFlushedMs)) {
      return;
    }
    ava_wtest_wt_async_write_call a;
    std::memcpy(&a, call.args(), sizeof a);
    if (call.hdr.func_id != AVA_WTEST_FN_WT_ASYNC_WRITE || call.hdr.flags != AVA_F_ASYNC ||
        call.hdr.args_len != sizeof a || a.obj != i + 1 ||
        (i > 0 && call.hdr.seq != last_seq + 1)) {
      w.fail("batched call " + std::to_string(i) + " out of order or wrong");
    }
    last_seq = call.hdr.seq;
  }
  Seen flush;
  if (!w.expect(AVA_MSG_CALL, &flush, kFlushedMs)) {
    return;
  }
  if (flush.hdr.func_id != AVA_WTEST_FN_WT_FLUSH ||
      flush.hdr.flags != (AVA_F_ASYNC | AVA_F_FLUSH) || flush.hdr.seq != last_seq + 1) {
    w.fail("the flushing call did not follow the batched ones");
  }
}

} // namespace

Test(guest_batch, flush_sends_the_batched_calls_ahead_of_itself) {
  setenv("AVA_BATCH", "1", 1);
  setenv("AVA_BATCH_US", kBatchUs, 1);
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    expect_flushed_calls(fw);
    g_received.release();
    Seen last;
    if (!fw.expect(AVA_MSG_GOODBYE, &last)) {
      fw.fail("something other than GOODBYE after the flush");
    }
  });
  for (uint64_t i = 0; i < kAsyncCalls; ++i) {
    const char data[4] = "abc";
    cr_assert_eq(wt_async_write(obj(i + 1), data, sizeof data), WT_OK);
  }
  g_sent.release();
  cr_assert(g_quiet.wait(), "the worker did not check the batch");
  cr_assert_eq(wt_flush(), WT_OK);
  // Shutting down sends what is still batched: not before the worker looked.
  cr_assert(g_received.wait());
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  std::vector<Seen> seen = w.seen();
  cr_assert_eq(seen.size(), 2 + kAsyncCalls + 1, "HELLO, the calls, the flush, GOODBYE");
  for (const Seen &m : seen) {
    cr_expect(m.hdr.kind != AVA_MSG_CALL || (m.hdr.flags & AVA_F_SYNC) == 0,
              "a sync call was made");
  }
}
