// SPDX-License-Identifier: MIT
// ava_async_shape (shim/shape_cache.hpp): a call that may go without waiting
// is sent sync until a call of the same shape succeeded, so its first error
// is returned by the call itself; after a success of that shape it goes
// async; failures teach nothing; an async error reported later, like a new
// connection, makes every shape sync again. wt_shaped_set's shape is
// (obj, value < 0) (tests/wtest/wtest.spec.c).
#include <criterion/criterion.h>

#include <cstring>

#include "test_guest_support.hpp"

using guest_fake::FakeWorker;
using guest_fake::Seen;
using namespace wtest_guest;

namespace {

struct Step {
  uint64_t obj;
  int32_t value;
  bool sync;     // how the call must arrive
  int32_t reply; // the worker's answer to a sync one (and what the call returns)
  ava_reply_common common;
};

// The guest's calls, in order, and how each must reach the worker.
const Step kSteps[] = {
    {1, 5, true, WT_OK, {}},           // first of its shape: waits for the answer
    {1, 6, false, WT_OK, {}},          // same shape, another value: async
    {1, -1, true, WT_ERR_INVALID, {}}, // value < 0 is another shape: the error at the call
    {1, -2, true, WT_ERR_INVALID, {}}, // a failed shape is not learned
    {2, 1, true, WT_ERR_NOT_LIVE, {}}, // another object: its own shape
    {2, 3, true, WT_OK, {}},           // still unknown, now succeeds
    {2, 4, false, WT_OK, {}},          // and is learned
    {1, 7, false, WT_OK, {}},          // obj 1's shape is still known
    // A sync call whose reply reports that an earlier async call failed (-5):
    // the call returns that error in place of its success, and all is forgotten.
    {3, 1, true, WT_OK, {-5, kStatusClass, AVA_WTEST_FN_WT_ASYNC_SET}},
    {1, 9, true, WT_OK, {}}, // an async error came back: nothing is known any more
    {1, 10, false, WT_OK, {}},
};

} // namespace

Test(guest_shapes, calls_wait_until_their_shape_succeeded) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    for (const Step &s : kSteps) {
      Seen call;
      if (!fw.expect(AVA_MSG_CALL, &call) || call.hdr.func_id != AVA_WTEST_FN_WT_SHAPED_SET) {
        fw.fail("expected wt_shaped_set");
        return;
      }
      ava_wtest_wt_shaped_set_call a;
      std::memcpy(&a, call.args(), sizeof a);
      const bool sync = (call.hdr.flags & AVA_F_SYNC) != 0;
      if (a.obj != s.obj || a.value != s.value || sync != s.sync) {
        fw.fail("wt_shaped_set(" + std::to_string(a.obj) + ", " + std::to_string(a.value) +
                ") came " + (sync ? "sync" : "async"));
        return;
      }
      if (sync) {
        ava_wtest_wt_shaped_set_reply r{};
        r.ret = s.reply;
        fw.reply(call, &r, sizeof r, nullptr, 0, s.common);
      }
    }
    fw.wait_goodbye();
  });
  for (const Step &s : kSteps) {
    const int32_t want = s.common.async_error_class != 0 ? -5 : s.reply;
    cr_expect_eq(wt_shaped_set(obj(s.obj), s.value), want, "wt_shaped_set(%lu, %d)",
                 static_cast<unsigned long>(s.obj), s.value);
  }
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}
