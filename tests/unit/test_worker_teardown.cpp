// SPDX-License-Identifier: MIT
// When a guest goes away (GOODBYE, EOF, or mid-call) the worker destroys each
// object it owned exactly once, newest first, and keeps serving other guests.
// It destroys them with the spec's deallocating functions (wt_obj_release,
// wt_other_release), which the library counts with the guest's own releases.
#include <criterion/criterion.h>

#include "tests/wtest/wtest.h"
#include "tests/wtest/wtest_hooks.h"
#include "worker/testing/fake_guest.hpp"

using namespace ava;
using namespace ava::testing;

namespace {

WorkerHarness *new_harness() {
  auto *harness = new WorkerHarness();
  harness->plugins().add(ava_worker_spec_export());
  return harness;
}

std::unique_ptr<FakeGuest> connect(WorkerHarness &harness) {
  auto guest = harness.connect();
  cr_assert(guest != nullptr);
  cr_assert_eq(guest->hello(), AVA_OK);
  return guest;
}

void release(FakeGuest &guest, uint64_t obj) {
  ava_wtest_wt_obj_release_call a{.obj = obj};
  Received reply;
  cr_assert_eq(guest.call(AVA_WTEST_FN_WT_OBJ_RELEASE, a, &reply), AVA_OK);
  cr_assert_eq(reply.reply<ava_wtest_wt_obj_release_reply>().ret, WT_OK);
}

enum class Leave { Goodbye, Eof };

void owned_objects_are_destroyed_once(Leave how) {
  std::unique_ptr<WorkerHarness> harness(new_harness());
  auto guest = connect(*harness);
  uint64_t objs[5];
  for (uint64_t &obj : objs)
    obj = guest->create_obj(32);
  cr_assert_neq(guest->create_other(), 0u);
  release(*guest, objs[2]); // released by the guest: not the worker's to destroy
  cr_assert_eq(wt_lib_released(WT_KIND_OBJ), 1u);
  const char label[] = "kept";
  Payload p;
  ava_wtest_wt_set_label_call set{.obj = objs[0], .label = p.add(label, sizeof label)};
  Received reply;
  cr_assert_eq(guest->call(AVA_WTEST_FN_WT_SET_LABEL, set, &reply, p), AVA_OK);
  cr_assert_eq(wt_lib_live_objects(), 5u);

  if (how == Leave::Goodbye)
    guest->goodbye();
  else
    guest->close();
  cr_expect(harness->finish(0).is_ok());
  cr_expect_eq(wt_lib_released(WT_KIND_OBJ), 1u + 4u, "the guest's release and 4 at teardown");
  cr_expect_eq(wt_lib_released(WT_KIND_OTHER), 1u);
  cr_expect_eq(wt_lib_bad_releases(), 0u);
  cr_expect_eq(wt_lib_live_objects(), 0u);
}

} // namespace

Test(worker_teardown, goodbye_destroys_owned_objects_once, .timeout = 60) {
  owned_objects_are_destroyed_once(Leave::Goodbye);
}

Test(worker_teardown, eof_destroys_owned_objects_once, .timeout = 60) {
  owned_objects_are_destroyed_once(Leave::Eof);
}

Test(worker_teardown, guest_leaving_mid_call, .timeout = 60) {
  std::unique_ptr<WorkerHarness> harness(new_harness());
  auto a = connect(*harness);
  auto b = connect(*harness);
  uint64_t a_objs[3];
  for (uint64_t &obj : a_objs)
    obj = a->create_obj(16);
  uint64_t b_obj = b->create_obj(16);
  cr_assert_neq(b_obj, 0u);

  // A's thread 1 enters a slow call, with more calls queued behind it.
  ava_wtest_wt_block_call none{};
  RawMessage block = a->make_call(AVA_WTEST_FN_WT_BLOCK, &none, sizeof none);
  cr_assert(a->send(block).is_ok());
  for (int i = 0; i < 5; ++i)
    cr_assert(a->send_async(AVA_WTEST_FN_WT_ASYNC_SET,
                            ava_wtest_wt_async_set_call{.obj = a_objs[0], .value = i})
                  .is_ok());
  cr_assert(wt_lib_wait_blocked(kWaitMs));

  // B is not held up by A's slow call, nor by A leaving in the middle of it.
  cr_expect_eq(b->add(1, 2), 3);
  a->close();
  cr_expect_eq(b->add(3, 4), 7);
  cr_expect_eq(wt_lib_released(WT_KIND_OBJ), 0u, "destroyed while a call was still running");

  wt_lib_unblock();
  cr_expect(harness->finish(0).is_ok());
  cr_expect_eq(wt_lib_released(WT_KIND_OBJ), 3u);
  cr_expect_eq(wt_lib_bad_releases(), 0u);
  cr_expect_eq(wt_lib_live_objects(), 1u, "B's object must survive A's teardown");

  cr_expect_eq(b->add(5, 6), 11);
  ava_wtest_wt_obj_write_call w{.obj = b_obj, .data = ava_buf_desc{}, .size = 0};
  Received reply;
  cr_expect_eq(b->call(AVA_WTEST_FN_WT_OBJ_WRITE, w, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_obj_write_reply>().ret, WT_OK);
  b->goodbye();
  cr_expect(harness->finish(1).is_ok());
  cr_expect_eq(wt_lib_released(WT_KIND_OBJ), 4u);
  cr_expect_eq(wt_lib_live_objects(), 0u);
}

Test(worker_teardown, objects_seen_but_not_owned_are_left_alone, .timeout = 60) {
  std::unique_ptr<WorkerHarness> harness(new_harness());
  auto a = connect(*harness);
  auto b = connect(*harness);
  uint64_t a_obj = a->create_obj(8);
  cr_assert_neq(a_obj, 0u);
  // B learns of A's object through the library (a non-owned handle).
  ava_wtest_wt_list_call list{.objs = Payload::out(8), .capacity = 1, .count = Payload::out(4)};
  Received reply;
  cr_assert_eq(b->call(AVA_WTEST_FN_WT_LIST, list, &reply), AVA_OK);
  const auto lr = reply.reply<ava_wtest_wt_list_reply>();
  cr_assert_eq(reply.out<uint32_t>(lr.count), 1u);
  cr_assert_neq(reply.out<uint64_t>(lr.objs), 0u);
  b->goodbye();
  cr_expect(harness->finish(1).is_ok());
  cr_expect_eq(wt_lib_released(WT_KIND_OBJ), 0u);
  cr_expect_eq(a->add(1, 1), 2);
  a->goodbye();
  cr_expect(harness->finish(0).is_ok());
  cr_expect_eq(wt_lib_released(WT_KIND_OBJ), 1u);
  cr_expect_eq(wt_lib_bad_releases(), 0u);
}

Test(worker_teardown, many_guests_come_and_go, .timeout = 60) {
  std::unique_ptr<WorkerHarness> harness(new_harness());
  auto steady = connect(*harness);
  constexpr int kGuests = 20;
  for (int i = 0; i < kGuests; ++i) {
    auto guest = connect(*harness);
    guest->create_obj(8, 1);
    guest->create_obj(8, 2);
    cr_expect_eq(steady->add(i, 1), i + 1);
    if (i % 2 == 0)
      guest->goodbye();
    else
      guest->close();
    cr_expect(harness->finish(static_cast<size_t>(i + 1)).is_ok());
  }
  cr_expect_eq(wt_lib_released(WT_KIND_OBJ), 2u * kGuests);
  cr_expect_eq(wt_lib_live_objects(), 0u);
  cr_expect_eq(steady->add(2, 2), 4);
}
