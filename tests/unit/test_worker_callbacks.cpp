// SPDX-License-Identifier: MIT
// Worker-to-guest callbacks: the CALLBACK message, CALLBACK_DONE releasing the
// waiting trampoline, timeouts, and guests that leave (no hang, no crash).
#include <criterion/criterion.h>

#include <cstring>
#include <thread>

#include "worker/testing/fake_guest.hpp"
#include "worker/testing/wtest_spec.h"

using namespace ava;
using namespace ava::testing;

namespace {

constexpr uint64_t kCallbackId = 77;

struct Session {
  WorkerHarness harness;
  std::unique_ptr<FakeGuest> guest;
  uint64_t obj = 0;

  explicit Session(WorkerOptions options = {}) : harness(std::move(options)) {
    harness.plugins().add(&wt_worker_spec);
    guest = harness.connect();
    cr_assert(guest != nullptr);
    cr_assert_eq(guest->hello(), AVA_OK);
    obj = guest->create_obj(8);
    wt_set_callback_args a{obj, kCallbackId};
    Received reply;
    cr_assert_eq(guest->call(WT_FN_SET_CALLBACK, a, &reply), AVA_OK);
    cr_assert_eq(reply.reply<wt_status_reply>().ret, WT_OK);
  }

  // Sends fire(event) from guest thread 3 and returns the CALLBACK it causes.
  RawMessage fire(int32_t event, Received *callback) {
    wt_fire_args a{obj, event, 0};
    RawMessage message = guest->make_call(WT_FN_FIRE, &a, sizeof a, {}, AVA_F_SYNC, 3);
    cr_assert(guest->send(message).is_ok());
    cr_assert(guest->recv(callback).is_ok());
    cr_assert_eq(callback->hdr.kind, AVA_MSG_CALLBACK);
    return message;
  }

  void done(const Received &callback, int status) {
    RawMessage m(AVA_MSG_CALLBACK_DONE, callback.hdr.func_id, nullptr, 0);
    m.hdr().call_id = callback.hdr.call_id;
    m.hdr().seq = callback.hdr.seq;
    m.hdr().status = status;
    cr_assert(guest->send(m).is_ok());
  }

  int32_t fire_result(const RawMessage &fire) {
    Received reply;
    cr_assert(guest->recv(&reply).is_ok());
    cr_assert_eq(reply.hdr.kind, AVA_MSG_REPLY);
    cr_assert_eq(reply.hdr.call_id, fire.hdr().call_id);
    cr_assert_eq(reply.hdr.status, AVA_OK);
    return reply.reply<wt_status_reply>().ret;
  }
};

} // namespace

Test(worker_callbacks, round_trip, .timeout = 60) {
  Session s;
  Received cb;
  RawMessage fire = s.fire(5, &cb);
  cr_expect_eq(cb.hdr.spec_id, WT_SPEC_ID);
  cr_expect_eq(cb.hdr.func_id, WT_CB_EVENT);
  cr_expect_eq(cb.hdr.call_id, kCallbackId);
  cr_expect_eq(cb.hdr.thread_id, 3u, "the guest thread whose call fired it");
  cr_expect_eq(cb.hdr.flags, AVA_F_SYNC);
  auto args = cb.callback_args<wt_event_cb_args>();
  cr_expect_eq(cb.args.size(), sizeof args);
  cr_expect_eq(args.obj, s.obj);
  cr_expect_eq(args.event, 5);
  std::vector<uint8_t> message = cb.bytes(args.message);
  cr_assert_eq(message.size(), sizeof "event 5");
  cr_expect_str_eq(reinterpret_cast<const char *>(message.data()), "event 5");
  s.done(cb, AVA_OK);
  cr_expect_eq(s.fire_result(fire), AVA_OK);
}

Test(worker_callbacks, invocations_are_told_apart, .timeout = 60) {
  Session s;
  uint64_t last_seq = 0;
  for (int i = 0; i < 50; ++i) {
    Received cb;
    RawMessage fire = s.fire(i, &cb);
    cr_expect_neq(cb.hdr.seq, last_seq);
    last_seq = cb.hdr.seq;
    // A stale answer first: it must not release this invocation.
    if (i > 0) {
      Received stale = cb;
      stale.hdr.seq = cb.hdr.seq - 1;
      s.done(stale, AVA_E_PROTO);
    }
    s.done(cb, AVA_OK);
    cr_expect_eq(s.fire_result(fire), AVA_OK);
  }
}

Test(worker_callbacks, guest_status_reaches_the_trampoline, .timeout = 60) {
  Session s;
  Received cb;
  RawMessage fire = s.fire(1, &cb);
  s.done(cb, AVA_E_PROTO);
  cr_expect_eq(s.fire_result(fire), AVA_E_PROTO);
  // Statuses outside the AVA_E_* range are not passed on as they are.
  fire = s.fire(2, &cb);
  s.done(cb, 12345);
  cr_expect_eq(s.fire_result(fire), AVA_E_PROTO);
}

Test(worker_callbacks, unanswered_callback_times_out, .timeout = 60) {
  WorkerOptions options;
  options.callback_timeout_ms = 50;
  Session s(options);
  Received cb;
  RawMessage fire = s.fire(1, &cb);
  cr_expect_eq(s.fire_result(fire), AVA_E_TIMEOUT);
  s.done(cb, AVA_OK); // too late: ignored
  cr_expect_eq(s.guest->add(1, 2), 3);
}

Test(worker_callbacks, guest_leaving_during_a_callback, .timeout = 60) {
  Session s; // the default callback timeout is far longer than this test's limit
  Received cb;
  s.fire(1, &cb);
  s.guest->close();
  cr_expect(s.harness.finish(0).is_ok());
  cr_expect_eq(wt_lib_live_objects(), 0u);
}

Test(worker_callbacks, late_trampolines_are_harmless, .timeout = 60) {
  Session s;
  wt_global_callback_args a{9};
  Received reply;
  cr_assert_eq(s.guest->call(WT_FN_SET_GLOBAL_CALLBACK, a, &reply), AVA_OK);
  s.guest->goodbye();
  cr_expect(s.harness.finish(0).is_ok());
  // The library fires after the guest left: the trampoline fails cleanly.
  cr_expect_eq(wt_lib_fire_global(1), AVA_E_CLOSED);
}

Test(worker_callbacks, async_callbacks_from_library_threads, .timeout = 60) {
  Session s;
  wt_global_callback_args a{10};
  Received reply;
  cr_assert_eq(s.guest->call(WT_FN_SET_GLOBAL_CALLBACK, a, &reply), AVA_OK);
  // A library thread fires while the guest answers on its side.
  int32_t result = 1;
  std::thread library([&] { result = wt_lib_fire_global(4); });
  Received cb;
  cr_assert(s.guest->recv(&cb).is_ok());
  cr_expect_eq(cb.hdr.kind, AVA_MSG_CALLBACK);
  cr_expect_eq(cb.hdr.call_id, 10u);
  cr_expect_eq(cb.hdr.thread_id, 0u, "not fired from a guest thread's call");
  cr_expect_eq(cb.callback_args<wt_event_cb_args>().obj, 0u);
  s.done(cb, AVA_OK);
  library.join();
  cr_expect_eq(result, AVA_OK);
}
