// SPDX-License-Identifier: MIT
// Worker-to-guest callbacks: the CALLBACK message, CALLBACK_DONE releasing the
// waiting trampoline, timeouts, and guests that leave (no hang, no crash).
#include <criterion/criterion.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "tests/wtest/wtest.h"
#include "tests/wtest/wtest_hooks.h"
#include "worker/callback_registry.hpp"
#include "worker/testing/fake_guest.hpp"

using namespace ava;
using namespace ava::testing;

namespace {

constexpr uint64_t kCallbackId = 77;
constexpr uint64_t kGlobalId = 10;
using EventArgs = ava_wtest_cb_wt_event_callback;

// What a trampoline does with a registration's context, keeping what the
// runtime answers: cava generates trampolines for void callbacks only, and
// they drop that answer, so it is checked by running the same steps here.
int invoke(void *ctx, int32_t event) {
  ava_wcb cb;
  int rc = ava_wcb_begin(&cb, ctx, AVA_WTEST_CB_WT_EVENT_CALLBACK);
  if (rc != AVA_OK)
    return rc;
  EventArgs a{};
  a.event = event;
  return ava_wcb_invoke(&cb, &a, sizeof a, 1);
}

// invoke() on a thread of its own, as a library thread would call back.
class LibraryThread {
public:
  LibraryThread(void *ctx, int32_t event)
      : thread_([this, ctx, event] { result_ = invoke(ctx, event); }) {}
  ~LibraryThread() {
    if (thread_.joinable())
      thread_.join();
  }
  int join() {
    thread_.join();
    return result_;
  }

private:
  std::atomic<int> result_{1}; // before thread_, which writes it
  std::thread thread_;
};

struct Session {
  WorkerHarness harness;
  std::unique_ptr<FakeGuest> guest;
  uint64_t obj = 0;

  explicit Session(WorkerOptions options = {}) : harness(std::move(options)) {
    harness.plugins().add(ava_worker_spec_export());
    guest = harness.connect();
    cr_assert(guest != nullptr);
    cr_assert_eq(guest->hello(), AVA_OK);
    obj = guest->create_obj(8);
    ava_wtest_wt_set_callback_call a{.obj = obj, .fn = kCallbackId, .user = 1};
    Received reply;
    cr_assert_eq(guest->call(AVA_WTEST_FN_WT_SET_CALLBACK, a, &reply), AVA_OK);
    cr_assert_eq(reply.reply<ava_wtest_wt_set_callback_reply>().ret, WT_OK);
  }

  // Registers the library-wide callback (wt_lib_fire_global) under id.
  void set_global(uint64_t id) {
    ava_wtest_wt_set_global_callback_call a{.fn = id, .user = 1};
    Received reply;
    cr_assert_eq(guest->call(AVA_WTEST_FN_WT_SET_GLOBAL_CALLBACK, a, &reply), AVA_OK);
    cr_assert_eq(reply.reply<ava_wtest_wt_set_global_callback_reply>().ret, WT_OK);
    cr_assert_not_null(wt_lib_global_user());
  }

  // Sends fire(event) from guest thread 3 and returns the CALLBACK it causes.
  RawMessage fire(int32_t event, Received *callback) {
    ava_wtest_wt_fire_call a{.obj = obj, .event = event};
    RawMessage message = guest->make_call(AVA_WTEST_FN_WT_FIRE, &a, sizeof a, {}, AVA_F_SYNC, 3);
    cr_assert(guest->send(message).is_ok());
    expect_callback(callback, kCallbackId);
    return message;
  }

  void expect_callback(Received *callback, uint64_t id) {
    cr_assert(guest->recv(callback).is_ok());
    cr_assert_eq(callback->hdr.kind, AVA_MSG_CALLBACK);
    cr_assert_eq(callback->hdr.call_id, id);
  }

  void done(const Received &callback, int status) {
    RawMessage m(AVA_MSG_CALLBACK_DONE, callback.hdr.func_id, nullptr, 0);
    m.hdr().call_id = callback.hdr.call_id;
    m.hdr().seq = callback.hdr.seq;
    m.hdr().status = status;
    cr_assert(guest->send(m).is_ok());
  }

  // The reply to fire; it comes once the trampoline returned.
  int64_t fire_result(const RawMessage &fire) {
    Received reply;
    cr_assert(guest->recv(&reply).is_ok());
    cr_assert_eq(reply.hdr.kind, AVA_MSG_REPLY);
    cr_assert_eq(reply.hdr.call_id, fire.hdr().call_id);
    cr_assert_eq(reply.hdr.status, AVA_OK);
    return reply.reply<ava_wtest_wt_fire_reply>().ret;
  }
};

} // namespace

Test(worker_callbacks, round_trip, .timeout = 60) {
  Session s;
  Received cb;
  RawMessage fire = s.fire(5, &cb);
  cr_expect_eq(cb.hdr.spec_id, AVA_WTEST_SPEC_ID);
  cr_expect_eq(cb.hdr.func_id, AVA_WTEST_CB_WT_EVENT_CALLBACK);
  cr_expect_eq(cb.hdr.call_id, kCallbackId);
  cr_expect_eq(cb.hdr.thread_id, 3u, "the guest thread whose call fired it");
  cr_expect_eq(cb.hdr.flags, AVA_F_SYNC);
  auto args = cb.callback_args<EventArgs>();
  cr_expect_eq(cb.args.size(), sizeof args);
  cr_expect_eq(args.obj, s.obj);
  cr_expect_eq(args.event, 5);
  std::vector<uint8_t> message = cb.bytes(args.message);
  cr_assert_eq(message.size(), sizeof "event 5");
  cr_expect_str_eq(reinterpret_cast<const char *>(message.data()), "event 5");
  s.done(cb, AVA_OK);
  cr_expect_eq(s.fire_result(fire), WT_OK);
}

// wt_notify's registration lives for its call only (ava_lifetime_call).
Test(worker_callbacks, call_lifetime_registration, .timeout = 60) {
  Session s;
  ava_wtest_wt_notify_call a{.obj = s.obj, .event = 7, .fn = 55, .user = 1};
  RawMessage notify = s.guest->make_call(AVA_WTEST_FN_WT_NOTIFY, &a, sizeof a, {}, AVA_F_SYNC, 3);
  cr_assert(s.guest->send(notify).is_ok());
  Received cb;
  s.expect_callback(&cb, 55);
  cr_expect_eq(cb.hdr.thread_id, 3u);
  const auto args = cb.callback_args<EventArgs>();
  cr_expect_eq(args.obj, s.obj);
  cr_expect_eq(args.event, 7);
  std::vector<uint8_t> message = cb.bytes(args.message);
  cr_assert_eq(message.size(), sizeof "event 7");
  cr_expect_str_eq(reinterpret_cast<const char *>(message.data()), "event 7");
  s.done(cb, AVA_OK);
  Received reply;
  cr_assert(s.guest->recv(&reply).is_ok());
  cr_assert_eq(reply.hdr.kind, AVA_MSG_REPLY);
  cr_expect_eq(reply.hdr.call_id, notify.hdr().call_id);
  cr_expect_eq(reply.reply<ava_wtest_wt_notify_reply>().ret, WT_OK);
}

Test(worker_callbacks, invocations_are_told_apart, .timeout = 60) {
  Session s;
  s.set_global(kGlobalId);
  uint64_t last_seq = 0;
  for (int i = 0; i < 50; ++i) {
    LibraryThread library(wt_lib_global_user(), i);
    Received cb;
    s.expect_callback(&cb, kGlobalId);
    cr_expect_neq(cb.hdr.seq, last_seq);
    last_seq = cb.hdr.seq;
    // A stale answer first: it must not release this invocation.
    if (i > 0) {
      Received stale = cb;
      stale.hdr.seq = cb.hdr.seq - 1;
      s.done(stale, AVA_E_PROTO);
    }
    s.done(cb, AVA_OK);
    cr_expect_eq(library.join(), AVA_OK, "invocation %d", i);
  }
  // The generated trampoline's invocations are numbered the same way.
  Received cb;
  RawMessage fire = s.fire(1, &cb);
  cr_expect_neq(cb.hdr.seq, last_seq);
  s.done(cb, AVA_OK);
  cr_expect_eq(s.fire_result(fire), WT_OK);
}

Test(worker_callbacks, guest_status_reaches_the_trampoline, .timeout = 60) {
  Session s;
  s.set_global(kGlobalId);
  LibraryThread failed(wt_lib_global_user(), 1);
  Received cb;
  s.expect_callback(&cb, kGlobalId);
  s.done(cb, AVA_E_PROTO);
  cr_expect_eq(failed.join(), AVA_E_PROTO);
  // Statuses outside the AVA_E_* range are not passed on as they are.
  LibraryThread odd(wt_lib_global_user(), 2);
  s.expect_callback(&cb, kGlobalId);
  s.done(cb, 12345);
  cr_expect_eq(odd.join(), AVA_E_PROTO);
  // A generated (void) trampoline returns to the library whatever the guest said.
  RawMessage fire = s.fire(3, &cb);
  s.done(cb, AVA_E_PROTO);
  cr_expect_eq(s.fire_result(fire), WT_OK);
}

Test(worker_callbacks, unanswered_callback_times_out, .timeout = 60) {
  WorkerOptions options;
  options.callback_timeout_ms = 50;
  Session s(options);
  s.set_global(kGlobalId);
  LibraryThread library(wt_lib_global_user(), 1);
  Received cb;
  s.expect_callback(&cb, kGlobalId);
  cr_expect_eq(library.join(), AVA_E_TIMEOUT);
  s.done(cb, AVA_OK); // too late: ignored
  // Through the generated trampoline: the call returns without an answer.
  RawMessage fire = s.fire(1, &cb);
  cr_expect_eq(s.fire_result(fire), WT_OK);
  s.done(cb, AVA_OK);
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
  s.set_global(9);
  s.guest->goodbye();
  cr_expect(s.harness.finish(0).is_ok());
  // The library fires after the guest left: the trampoline fails cleanly.
  cr_expect_eq(wt_lib_fire_global(1), 0, "the trampoline returned");
  cr_expect_eq(invoke(wt_lib_global_user(), 1), AVA_E_CLOSED);
}

Test(worker_callbacks, async_callbacks_from_library_threads, .timeout = 60) {
  Session s;
  s.set_global(kGlobalId);
  // A library thread fires while the guest answers on its side.
  std::atomic<int> result{-1};
  std::thread library([&] { result = wt_lib_fire_global(4); });
  Received cb;
  s.expect_callback(&cb, kGlobalId);
  cr_expect_eq(cb.hdr.thread_id, 0u, "not fired from a guest thread's call");
  const auto args = cb.callback_args<EventArgs>();
  cr_expect_eq(args.obj, 0u);
  cr_expect_eq(args.event, 4);
  std::vector<uint8_t> message = cb.bytes(args.message);
  cr_expect(message.size() == sizeof "global" && std::memcmp(message.data(), "global", 7) == 0);
  cr_expect_eq(result.load(), -1, "the trampoline returned before CALLBACK_DONE");
  s.done(cb, AVA_OK);
  library.join();
  cr_expect_eq(result.load(), 0);
}

// A once registration (ava_lifetime_once) ends when its callback has run: a
// library that calls it again reaches nothing, and one that never ran goes
// with the guest. (Static ones stay until the guest goes: an event callback
// a program sets per command would keep a context per command.)
Test(worker_callbacks, once_registrations_end_when_run, .timeout = 60) {
  Session s;
  ava_wtest_wt_set_once_callback_call a{.fn = kGlobalId, .user = 1};
  Received reply;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_SET_ONCE_CALLBACK, a, &reply), AVA_OK);
  void *ctx = wt_lib_global_user();
  const uint64_t key = CallbackRegistry::from_user_data(ctx);
  cr_assert_not_null(CallbackRegistry::instance().find(key));
  std::atomic<int> result{-1};
  std::thread library([&] { result = invoke(ctx, 4); });
  Received cb;
  s.expect_callback(&cb, kGlobalId);
  s.done(cb, AVA_OK);
  library.join();
  cr_expect_eq(result.load(), AVA_OK);
  cr_expect_null(CallbackRegistry::instance().find(key), "the context outlived its one run");
  cr_expect_eq(invoke(ctx, 5), AVA_E_CLOSED, "a second call of a once callback");

  a.fn = kGlobalId + 1;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_SET_ONCE_CALLBACK, a, &reply), AVA_OK);
  const uint64_t never_run = CallbackRegistry::from_user_data(wt_lib_global_user());
  cr_assert_not_null(CallbackRegistry::instance().find(never_run));
  s.guest->goodbye();
  cr_expect(s.harness.finish(0).is_ok());
  cr_expect_null(CallbackRegistry::instance().find(never_run), "kept after the guest left");
}

// A registration the library refused never runs: its context goes with the
// call and stops counting against the guest's callbacks budget. Under a
// budget of 2 (the session's coupled callback and one more), refused
// registrations of every kept lifetime may be tried again and again, and a
// real one still fits.
Test(worker_callbacks, a_refused_registration_keeps_no_context, .timeout = 60) {
  const uint32_t funcs[] = {AVA_WTEST_FN_WT_SET_GLOBAL_CALLBACK, AVA_WTEST_FN_WT_SET_ONCE_CALLBACK};
  for (uint32_t func : funcs) {
    WorkerOptions options;
    options.max_guest_callbacks = 2;
    Session s(options);
    ava_wtest_wt_set_global_callback_call a{.fn = kGlobalId, .user = 1};
    static_assert(sizeof a == sizeof(ava_wtest_wt_set_once_callback_call));
    Received reply;
    for (int i = 0; i < 3; i++) {
      wt_lib_refuse_global(WT_ERR_INVALID);
      cr_assert_eq(s.guest->call(func, a, &reply), AVA_OK, "func %u, try %d", func, i);
      cr_expect_eq(reply.reply<ava_wtest_wt_set_global_callback_reply>().ret, WT_ERR_INVALID,
                   "func %u, try %d", func, i);
    }
    cr_assert_eq(s.guest->call(func, a, &reply), AVA_OK,
                 "func %u: a real registration after refused ones (the budget held them)", func);
    cr_expect_eq(reply.reply<ava_wtest_wt_set_global_callback_reply>().ret, WT_OK);
    s.guest->goodbye();
    cr_expect(s.harness.finish(0).is_ok());
  }
}

// A function that returns a handle tells a refusal by NULL (as
// clCreateContext with its pfn_notify): the refused registrations must not
// hold the budget either, and a refused call's handle is not adopted.
Test(worker_callbacks, a_refused_handle_call_keeps_no_context, .timeout = 60) {
  WorkerOptions options;
  options.max_guest_callbacks = 2;
  Session s(options);
  ava_wtest_wt_obj_open_watched_call a{.size = 16, .fn = kGlobalId, .user = 1};
  Received reply;
  for (int i = 0; i < 3; i++) {
    wt_lib_refuse_global(WT_ERR_INVALID);
    cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_OPEN_WATCHED, a, &reply), AVA_OK, "try %d", i);
    cr_expect_eq(reply.reply<ava_wtest_wt_obj_open_watched_reply>().ret, 0u, "try %d", i);
  }
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_OPEN_WATCHED, a, &reply), AVA_OK);
  cr_expect_neq(reply.reply<ava_wtest_wt_obj_open_watched_reply>().ret, 0u,
                "a real registration after refused ones (the budget held them)");
  s.guest->goodbye();
  cr_expect(s.harness.finish(0).is_ok());
}