// SPDX-License-Identifier: MIT
// Async calls: per-guest-thread ordering, shadow threads with their own
// thread-local state, and deferred errors reported with the next sync reply
// of the same guest thread.
#include <criterion/criterion.h>

#include "tests/wtest/wtest.h"
#include "tests/wtest/wtest_hooks.h"
#include "worker/testing/fake_guest.hpp"

using namespace ava;
using namespace ava::testing;

namespace {

using SetCall = ava_wtest_wt_async_set_call;
constexpr uint32_t kSet = AVA_WTEST_FN_WT_ASYNC_SET;

struct Session {
  WorkerHarness harness;
  std::unique_ptr<FakeGuest> guest;
  uint64_t obj = 0;

  Session() {
    harness.plugins().add(ava_worker_spec_export());
    guest = harness.connect();
    cr_assert(guest != nullptr);
    cr_assert_eq(guest->hello(), AVA_OK);
    obj = guest->create_obj(8);
    cr_assert_neq(obj, 0u);
  }

  // A sync call on thread; returns its ava_reply_common.
  ava_reply_common get_value(uint64_t thread, int32_t *value) {
    ava_wtest_wt_get_value_call a{.obj = obj, .value = Payload::out(sizeof(int32_t))};
    Received reply;
    cr_assert_eq(guest->call(AVA_WTEST_FN_WT_GET_VALUE, a, &reply, {}, thread), AVA_OK);
    const auto r = reply.reply<ava_wtest_wt_get_value_reply>();
    cr_assert_eq(r.ret, WT_OK);
    *value = reply.out<int32_t>(r.value);
    return reply.common();
  }
};

} // namespace

Test(worker_async, async_then_sync_on_one_thread_stay_ordered, .timeout = 60) {
  Session s;
  for (int32_t i = 1; i <= 200; ++i) {
    cr_assert(s.guest->send_async(kSet, SetCall{.obj = s.obj, .value = i}).is_ok());
    if (i % 20 == 0) {
      int32_t value = 0;
      ava_reply_common c = s.get_value(1, &value);
      cr_expect_eq(value, i);
      cr_expect_eq(c.async_error_class, 0u);
    }
  }
}

Test(worker_async, error_surfaces_once_at_the_next_sync_call, .timeout = 60) {
  Session s;
  cr_assert(s.guest->send_async(kSet, SetCall{.obj = s.obj, .value = -5}).is_ok());
  // A second failure before the report does not replace the first.
  cr_assert(s.guest->send_async(kSet, SetCall{.obj = 0xbad, .value = 1}).is_ok());
  int32_t value = 0;
  ava_reply_common c = s.get_value(1, &value);
  cr_expect_eq(c.async_error_class, kStatusClass);
  cr_expect_eq(c.async_error_value, WT_ERR_INVALID);
  cr_expect_eq(c.async_error_func, kSet);
  cr_expect_eq(wt_lib_async_calls(), 2u, "both ran");
  c = s.get_value(1, &value);
  cr_expect_eq(c.async_error_class, 0u, "reported twice");
}

Test(worker_async, errors_belong_to_their_guest_thread, .timeout = 60) {
  Session s;
  cr_assert(s.guest->send_async(kSet, SetCall{.obj = s.obj, .value = -1}, 7).is_ok());
  int32_t value = 0;
  ava_reply_common c = s.get_value(1, &value);
  cr_expect_eq(c.async_error_class, 0u, "thread 1 got thread 7's error");
  c = s.get_value(7, &value);
  cr_expect_eq(c.async_error_class, kStatusClass);
}

Test(worker_async, error_replies_do_not_consume_the_report, .timeout = 60) {
  Session s;
  cr_assert(s.guest->send_async(kSet, SetCall{.obj = s.obj, .value = -1}).is_ok());
  // Fails in its handler: an OUT-only buffer cannot have an offset.
  ava_buf_desc spoiled = Payload::out(sizeof(int32_t));
  spoiled.offset = 8;
  ava_wtest_wt_get_value_call bad{.obj = s.obj, .value = spoiled};
  Received reply;
  cr_expect_eq(s.guest->call(AVA_WTEST_FN_WT_GET_VALUE, bad, &reply), AVA_E_PROTO);
  int32_t value = 0;
  ava_reply_common c = s.get_value(1, &value);
  cr_expect_eq(c.async_error_class, kStatusClass);
  cr_expect_eq(c.async_error_func, kSet);
}

Test(worker_async, each_guest_thread_has_its_own_shadow_thread, .timeout = 60) {
  Session s;
  const uint64_t threads[] = {1, 2, 99, 0xffffffffffffull};
  for (uint64_t t : threads) {
    ava_wtest_wt_set_tag_call a{.tag = static_cast<int32_t>(t % 1000 + 10)};
    Received reply;
    cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_SET_TAG, a, &reply, {}, t), AVA_OK);
  }
  for (uint64_t t : threads) {
    ava_wtest_wt_get_tag_call a{};
    Received reply;
    cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_GET_TAG, a, &reply, {}, t), AVA_OK);
    cr_expect_eq(reply.reply<ava_wtest_wt_get_tag_reply>().ret,
                 static_cast<int32_t>(t % 1000 + 10));
  }
}

Test(worker_async, a_slow_call_blocks_only_its_own_thread, .timeout = 60) {
  Session s;
  ava_wtest_wt_block_call none{};
  RawMessage block =
      s.guest->make_call(AVA_WTEST_FN_WT_BLOCK, &none, sizeof none, {}, AVA_F_SYNC, 5);
  cr_assert(s.guest->send(block).is_ok());
  cr_assert(wt_lib_wait_blocked(kWaitMs));
  cr_expect_eq(s.guest->add(2, 2, 6), 4);
  wt_lib_unblock();
  Received reply;
  cr_assert(s.guest->recv(&reply).is_ok());
  cr_expect_eq(reply.hdr.call_id, block.hdr().call_id);
  cr_expect_eq(reply.reply<ava_wtest_wt_block_reply>().ret, WT_OK);
}

// Program order across guest threads: an async call of thread 5 sent before
// a sync call of thread 6 runs first, even while thread 5's shadow is busy
// (the launch-on-A / wait-on-B race). Calls of other threads are held up
// only by async calls sent before them, not by thread 5's sync call.
Test(worker_async, async_calls_run_before_later_calls_of_other_threads, .timeout = 60) {
  Session s;
  ava_wtest_wt_block_call none{};
  RawMessage block =
      s.guest->make_call(AVA_WTEST_FN_WT_BLOCK, &none, sizeof none, {}, AVA_F_SYNC, 5);
  cr_assert(s.guest->send(block).is_ok());
  cr_assert(wt_lib_wait_blocked(kWaitMs));
  // Another thread is not held up by thread 5's sync call.
  cr_expect_eq(s.guest->add(2, 3, 7), 5);
  cr_assert(s.guest->send_async(kSet, SetCall{.obj = s.obj, .value = 77}, 5).is_ok());
  // Thread 6 reads the value: it must see 77, so it can only be answered
  // after thread 5's block ends and the async call runs.
  ava_wtest_wt_get_value_call a{.obj = s.obj, .value = Payload::out(sizeof(int32_t))};
  RawMessage get = s.guest->make_call(AVA_WTEST_FN_WT_GET_VALUE, &a, sizeof a, {}, AVA_F_SYNC, 6);
  cr_assert(s.guest->send(get).is_ok());
  wt_lib_unblock();
  bool saw_block = false, saw_get = false;
  for (int i = 0; i < 2; ++i) {
    Received reply;
    cr_assert(s.guest->recv(&reply).is_ok());
    if (reply.hdr.call_id == block.hdr().call_id) {
      saw_block = true;
    } else if (reply.hdr.call_id == get.hdr().call_id) {
      saw_get = true;
      cr_expect_eq(reply.out<int32_t>(reply.reply<ava_wtest_wt_get_value_reply>().value), 77,
                   "thread 6 ran before thread 5's async call");
    }
  }
  cr_expect(saw_block && saw_get);
}
