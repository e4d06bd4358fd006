// SPDX-License-Identifier: MIT
// Guest callbacks: the worker sends CALLBACK messages, the guest runs the
// registered function on its callback thread with the registered user data
// and answers CALLBACK_DONE; unknown or malformed ones are answered but not
// run (malformed ones with AVA_E_PROTO), also when a buffer holds fewer bytes
// than its size argument says; registrations end with their lifetime.
#include <criterion/criterion.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "test_guest_support.hpp"

using guest_fake::FakeWorker;
using guest_fake::kHdr;
using guest_fake::Seen;
using guest_fake::StderrCapture;
using namespace wtest_guest;

namespace {

// What the guest callback saw; waited for with a bound, never timed.
struct Observed {
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  uint64_t handle = 0;
  int32_t event = 0;
  std::string message;
  void *user = nullptr;
  uint64_t tid = 0;

  bool wait_calls(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return calls >= n; });
  }
};

Observed g_seen;
void (*g_in_callback)() = nullptr; // extra work done inside the callback

void on_event(wt_obj handle, int32_t event, const char *message, void *user) {
  if (g_in_callback != nullptr) {
    g_in_callback();
  }
  std::lock_guard lock(g_seen.mu);
  ++g_seen.calls;
  g_seen.handle = id_of(handle);
  g_seen.event = event;
  g_seen.message = message != nullptr ? message : "(null)";
  g_seen.user = user;
  g_seen.tid = static_cast<uint64_t>(gettid());
  g_seen.cv.notify_all();
}

constexpr uint64_t kSeq = 0xfeed0001;
constexpr uint32_t kEvent = AVA_WTEST_CB_WT_EVENT_CALLBACK;
using EventArgs = ava_wtest_cb_wt_event_callback;

// Sends a CALLBACK for registration id with event and message, then checks
// the CALLBACK_DONE that answers it.
bool fire(FakeWorker &w, uint64_t id, int32_t event, const char *message, uint64_t seq = kSeq) {
  EventArgs a{};
  a.obj = 9;
  a.event = event;
  size_t len = std::strlen(message);
  a.message = {0, len, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  a.user = 1;
  uint8_t payload[64] = {};
  std::memcpy(payload, message, len);
  ava_msg_hdr hdr = guest_fake::make_header(AVA_MSG_CALLBACK, AVA_WTEST_SPEC_ID, kHdr);
  hdr.func_id = kEvent;
  hdr.call_id = id;
  hdr.seq = seq;
  w.send(hdr, &a, sizeof a, payload, AVA_PAYLOAD_SPAN(len));
  Seen done;
  if (!w.expect(AVA_MSG_CALLBACK_DONE, &done)) {
    return false;
  }
  if (done.hdr.call_id != id || done.hdr.seq != seq || done.hdr.func_id != kEvent ||
      done.hdr.args_len != 0 || done.hdr.total_len != kHdr ||
      done.hdr.spec_id != AVA_WTEST_SPEC_ID || done.hdr.status != AVA_OK) {
    w.fail("CALLBACK_DONE does not echo the CALLBACK");
    return false;
  }
  return true;
}

// Serves a call of func (argument block Call, reply Reply) that registers a
// callback, and returns the registration id it carried.
template <class Call, class Reply>
uint64_t serve_registration(FakeWorker &w, uint32_t func, int64_t ret = WT_OK) {
  Seen call;
  if (!w.expect(AVA_MSG_CALL, &call) || call.hdr.func_id != func ||
      call.hdr.args_len != sizeof(Call)) {
    w.fail("expected the registering function " + std::to_string(func));
    return 0;
  }
  Call a;
  std::memcpy(&a, call.args(), sizeof a);
  if (a.user != 1) {
    w.fail("the guest sent no sign of its user data");
  }
  Reply r{};
  r.ret = ret;
  w.reply(call, &r, sizeof r);
  return a.fn;
}

// wt_set_callback: the registration lives as long as its object (COUPLED).
uint64_t serve_set_callback(FakeWorker &w) {
  return serve_registration<ava_wtest_wt_set_callback_call, ava_wtest_wt_set_callback_reply>(
      w, AVA_WTEST_FN_WT_SET_CALLBACK);
}

// wt_set_global_callback: the registration lives as long as the library (STATIC).
uint64_t serve_set_global(FakeWorker &w, int32_t ret = WT_OK) {
  return serve_registration<ava_wtest_wt_set_global_callback_call,
                            ava_wtest_wt_set_global_callback_reply>(
      w, AVA_WTEST_FN_WT_SET_GLOBAL_CALLBACK, ret);
}

// wt_set_once_callback: the registration lives until it ran once (ONCE).
uint64_t serve_set_once(FakeWorker &w, int32_t ret = WT_OK) {
  return serve_registration<ava_wtest_wt_set_once_callback_call,
                            ava_wtest_wt_set_once_callback_reply>(
      w, AVA_WTEST_FN_WT_SET_ONCE_CALLBACK, ret);
}

// wt_obj_open_watched: a handle-returning registration (STATIC), refused by NULL.
uint64_t serve_open_watched(FakeWorker &w, uint64_t handle) {
  return serve_registration<ava_wtest_wt_obj_open_watched_call,
                            ava_wtest_wt_obj_open_watched_reply>(
      w, AVA_WTEST_FN_WT_OBJ_OPEN_WATCHED, static_cast<int64_t>(handle));
}

// Shuts the guest library down, waits for the fake worker's script and
// checks that it saw nothing wrong.
void end_session(FakeWorker &w, StderrCapture &err) {
  ava_guest_shutdown(spec());
  w.join();
  err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}

// wt_notify: the registration lives for the call (CALL).
uint64_t serve_notify(FakeWorker &w) {
  return serve_registration<ava_wtest_wt_notify_call, ava_wtest_wt_notify_reply>(
      w, AVA_WTEST_FN_WT_NOTIFY);
}

template <class Reply> void serve_call(FakeWorker &w, uint32_t func, int32_t ret) {
  Seen call;
  if (!w.expect(AVA_MSG_CALL, &call) || call.hdr.func_id != func) {
    w.fail("expected function " + std::to_string(func));
    return;
  }
  Reply r{};
  r.ret = ret;
  w.reply(call, &r, sizeof r);
}

std::atomic<uint64_t> g_id{0};

} // namespace

Test(guest_callbacks, delivered_on_callback_thread_with_user_data) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    uint64_t id = serve_set_global(fw);
    g_id = id;
    if (id == 0) {
      fw.fail("no registration id");
      return;
    }
    fire(fw, id, 5, "event 5 on obj");
    fire(fw, id, 6, "event 6 on obj", kSeq + 1);
    fw.wait_goodbye();
  });
  int user = 0;
  cr_assert_eq(wt_set_global_callback(on_event, &user), WT_OK);
  cr_assert(g_seen.wait_calls(2), "the callback was not run");
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  std::lock_guard lock(g_seen.mu);
  cr_expect_eq(g_seen.calls, 2);
  cr_expect_eq(g_seen.handle, 9u);
  cr_expect_eq(g_seen.event, 6);
  cr_expect_str_eq(g_seen.message.c_str(), "event 6 on obj");
  cr_expect_eq(g_seen.user, &user);
  cr_expect_neq(g_seen.tid, static_cast<uint64_t>(gettid()), "callbacks run on their own thread");
}

// Malformed CALLBACK messages: each is answered with CALLBACK_DONE but the
// guest function is not run; a good one afterwards still works.
Test(guest_callbacks, unknown_or_malformed_are_answered_not_run) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    uint64_t id = serve_set_callback(fw);
    // Unknown registration id.
    fire(fw, id + 1000, 1, "unknown");
    struct Mutation {
      uint32_t decl;
      uint32_t spec_delta;
      uint32_t args_len;
      uint64_t msg_offset;
      uint8_t guard;
    };
    static const Mutation kBad[] = {
        {kEvent + 6, 0, sizeof(EventArgs), 0, 0}, // unknown declaration
        // The data callback's declaration (its arguments have the same size)
        // for an event callback's registration: fn must not be called as one.
        {AVA_WTEST_CB_WT_DATA_CALLBACK, 0, sizeof(EventArgs), 0, 0},
        {kEvent, 1, sizeof(EventArgs), 0, 0},     // other spec
        {kEvent, 0, sizeof(EventArgs) - 8, 0, 0}, // short argument block
        {kEvent, 0, sizeof(EventArgs), 40, 0},    // buffer beyond the payload
        {kEvent, 0, sizeof(EventArgs), 0, 'x'},   // no zero guard byte
    };
    uint64_t seq = 100;
    for (const Mutation &m : kBad) {
      EventArgs a{};
      a.message = {m.msg_offset, 8, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
      uint8_t payload[16] = {'b', 'a', 'd', 'b', 'a', 'd', 'b', 'a', m.guard};
      ava_msg_hdr hdr =
          guest_fake::make_header(AVA_MSG_CALLBACK, AVA_WTEST_SPEC_ID + m.spec_delta, kHdr);
      hdr.func_id = m.decl;
      hdr.call_id = id;
      hdr.seq = ++seq;
      fw.send(hdr, &a, m.args_len, payload, sizeof payload);
      Seen done;
      if (!fw.expect(AVA_MSG_CALLBACK_DONE, &done) || done.hdr.seq != seq ||
          done.hdr.status != AVA_E_PROTO) {
        fw.fail("malformed callback not answered with AVA_E_PROTO");
        return;
      }
    }
    fire(fw, id, 3, "good one");
    fw.wait_goodbye();
  });
  StderrCapture err;
  int user = 0;
  cr_assert_eq(wt_set_callback(obj(9), on_event, &user), WT_OK);
  cr_assert(g_seen.wait_calls(1));
  ava_guest_shutdown(spec());
  w.join();
  std::string log = err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  std::lock_guard lock(g_seen.mu);
  cr_expect_eq(g_seen.calls, 1, "only the good callback runs");
  cr_expect_eq(g_seen.event, 3);
  cr_expect(log.find("which is unknown; ignored") != std::string::npos, "%s", log.c_str());
  cr_expect(log.find("it is malformed") != std::string::npos, "%s", log.c_str());
  cr_expect(log.find("it names another spec") != std::string::npos, "%s", log.c_str());
  cr_expect(log.find("another callback declaration than the one registered") != std::string::npos,
            "%s", log.c_str());
}

// A COUPLED registration ends when its handle is released, a CALL one with
// its call; the worker's late CALLBACKs for them are answered, not run.
Test(guest_callbacks, lifetimes_end_registrations) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    uint64_t coupled = serve_set_callback(fw);
    uint64_t per_call = serve_notify(fw);
    uint64_t forever = serve_set_global(fw);
    uint64_t once = serve_set_once(fw);
    serve_call<ava_wtest_wt_obj_release_reply>(fw, AVA_WTEST_FN_WT_OBJ_RELEASE, WT_OK);
    // Inside the next call the guest has dropped the coupled registration.
    Seen call;
    if (!fw.expect(AVA_MSG_CALL, &call)) {
      return;
    }
    fire(fw, coupled, 1, "coupled");
    fire(fw, per_call, 2, "per call");
    fire(fw, once, 4, "once");
    fire(fw, once, 5, "once more"); // a lying worker: the registration ended
    fire(fw, forever, 3, "static");
    ava_wtest_wt_get_tag_reply r{};
    fw.reply(call, &r, sizeof r);
    fw.wait_goodbye();
  });
  StderrCapture err;
  int user = 0;
  cr_assert_eq(wt_set_callback(obj(7), on_event, &user), WT_OK);
  cr_assert_eq(wt_notify(obj(8), 0, on_event, &user), WT_OK);
  cr_assert_eq(wt_set_global_callback(on_event, &user), WT_OK);
  cr_assert_eq(wt_set_once_callback(on_event, &user), WT_OK);
  cr_assert_eq(wt_obj_release(obj(7)), WT_OK);
  cr_assert_eq(wt_get_tag(), 0);
  end_session(w, err);
  std::lock_guard lock(g_seen.mu);
  cr_expect_eq(g_seen.calls, 2, "the STATIC registration, and the ONCE one once");
  cr_expect_eq(g_seen.event, 3);
}

// Registrations of calls the API refused end with the call (their callbacks
// never run), whether the refusal is a status or a NULL handle: a CALLBACK
// naming one later reaches nothing, while a registration that succeeded runs.
Test(guest_callbacks, refused_registrations_end_with_their_call) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    uint64_t refused_static = serve_set_global(fw, WT_ERR_INVALID);
    uint64_t refused_once = serve_set_once(fw, WT_ERR_NOMEM);
    uint64_t refused_handle = serve_open_watched(fw, 0);
    uint64_t kept = serve_set_global(fw);
    Seen call;
    if (!fw.expect(AVA_MSG_CALL, &call)) {
      return;
    }
    fire(fw, refused_static, 1, "refused static");
    fire(fw, refused_once, 2, "refused once");
    fire(fw, refused_handle, 4, "refused handle");
    fire(fw, kept, 3, "kept");
    ava_wtest_wt_get_tag_reply r{};
    fw.reply(call, &r, sizeof r);
    fw.wait_goodbye();
  });
  StderrCapture err;
  int user = 0;
  cr_assert_eq(wt_set_global_callback(on_event, &user), WT_ERR_INVALID);
  cr_assert_eq(wt_set_once_callback(on_event, &user), WT_ERR_NOMEM);
  cr_assert_null(wt_obj_open_watched(16, on_event, &user));
  cr_assert_eq(wt_set_global_callback(on_event, &user), WT_OK);
  cr_assert_eq(wt_get_tag(), 0);
  end_session(w, err);
  std::lock_guard lock(g_seen.mu);
  cr_expect_eq(g_seen.calls, 1, "only the registration that succeeded ran");
  cr_expect_eq(g_seen.event, 3);
}

namespace {
void call_api_from_callback() {
  cr_expect_eq(wt_get_tag(), 11, "a call made inside a callback");
}
void shutdown_from_callback() {
  ava_guest_shutdown(spec());
}
} // namespace

// A callback may call the API: the reply reaches it while the worker waits
// for CALLBACK_DONE.
Test(guest_callbacks, callback_may_call_the_api) {
  g_in_callback = call_api_from_callback;
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    uint64_t id = serve_set_global(fw);
    EventArgs a{};
    a.message = {0, 0, 0, 0};
    ava_msg_hdr hdr = guest_fake::make_header(AVA_MSG_CALLBACK, AVA_WTEST_SPEC_ID, kHdr);
    hdr.func_id = kEvent;
    hdr.call_id = id;
    hdr.seq = 1;
    fw.send(hdr, &a, sizeof a, nullptr, 0);
    serve_call<ava_wtest_wt_get_tag_reply>(fw, AVA_WTEST_FN_WT_GET_TAG, 11);
    Seen done;
    fw.expect(AVA_MSG_CALLBACK_DONE, &done);
    fw.wait_goodbye();
  });
  int user = 0;
  cr_assert_eq(wt_set_global_callback(on_event, &user), WT_OK);
  cr_assert(g_seen.wait_calls(1));
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  std::lock_guard lock(g_seen.mu);
  cr_expect_str_eq(g_seen.message.c_str(), "(null)", "an absent buffer arrives as NULL");
}

// ava_guest_shutdown from inside a callback (e.g. exit() in a callback runs
// the library destructor there) must not join the callback thread itself.
Test(guest_callbacks, shutdown_from_inside_a_callback) {
  g_in_callback = shutdown_from_callback;
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    uint64_t id = serve_set_global(fw);
    EventArgs a{};
    ava_msg_hdr hdr = guest_fake::make_header(AVA_MSG_CALLBACK, AVA_WTEST_SPEC_ID, kHdr);
    hdr.func_id = kEvent;
    hdr.call_id = id;
    hdr.seq = 1;
    fw.send(hdr, &a, sizeof a, nullptr, 0);
    if (!fw.wait_goodbye()) {
      fw.fail("no GOODBYE from a shutdown inside a callback");
    }
  });
  int user = 0;
  cr_assert_eq(wt_set_global_callback(on_event, &user), WT_OK);
  cr_assert(g_seen.wait_calls(1));
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  StderrCapture err;
  cr_expect_eq(wt_get_tag(), kErr, "calls after shutdown fail");
  cr_expect(err.finish().find("after the wtest guest library was shut down") != std::string::npos);
  ava_guest_shutdown(spec());
}

namespace {

// What the wt_data_callback saw: it reads every byte it is told it has, as
// a program reads private_info's cb bytes (ASan would see an overread).
struct DataSeen {
  std::mutex mu;
  int calls = 0;
  uint64_t size = 0;
  std::string bytes;
};
DataSeen g_data;

void on_data(wt_obj, const void *data, uint64_t size, void *) {
  std::string copy(static_cast<const char *>(data), size);
  std::lock_guard lock(g_data.mu);
  ++g_data.calls;
  g_data.size = size;
  g_data.bytes = copy;
}

// Sends a wt_data_callback for registration id whose buffer holds len bytes
// of text while its size argument says size; the CALLBACK_DONE's status.
int32_t fire_data(FakeWorker &w, uint64_t id, uint64_t seq, const char *text, uint64_t len,
                  uint64_t size) {
  ava_wtest_cb_wt_data_callback a{};
  a.obj = 9;
  a.data = {0, len, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  a.size = size;
  a.user = 1;
  std::vector<uint8_t> payload(AVA_PAYLOAD_SPAN(len), 0);
  std::memcpy(payload.data(), text, len);
  ava_msg_hdr hdr = guest_fake::make_header(AVA_MSG_CALLBACK, AVA_WTEST_SPEC_ID, kHdr);
  hdr.func_id = AVA_WTEST_CB_WT_DATA_CALLBACK;
  hdr.call_id = id;
  hdr.seq = seq;
  w.send(hdr, &a, sizeof a, payload.data(), payload.size());
  Seen done;
  if (!w.expect(AVA_MSG_CALLBACK_DONE, &done) || done.hdr.seq != seq) {
    w.fail("data callback not answered");
    return INT32_MIN;
  }
  return done.hdr.status;
}

} // namespace

// A hostile worker sends a callback whose buffer is shorter (or longer) than
// its size argument says, as a lying OpenCL worker could with pfn_notify's
// private_info and cb: the program's function is not run with it, the guest
// tells the worker AVA_E_PROTO and logs why, and a truthful one still runs.
Test(guest_callbacks, buffer_shorter_than_its_size_argument_is_refused) {
  FakeWorker w;
  w.configure_guest();
  static std::atomic<int32_t> short_status{0}, long_status{0}, good_status{INT32_MIN};
  w.start([](FakeWorker &fw) {
    Seen call;
    if (!fw.expect(AVA_MSG_CALL, &call) || call.hdr.func_id != AVA_WTEST_FN_WT_NOTIFY_DATA) {
      fw.fail("expected wt_notify_data");
      return;
    }
    ava_wtest_wt_notify_data_call a;
    std::memcpy(&a, call.args(), sizeof a);
    // Inside the call the registration is live.
    short_status = fire_data(fw, a.fn, 1, "abcd", 4, 1u << 20);
    long_status = fire_data(fw, a.fn, 2, "abcdefgh", 8, 4);
    good_status = fire_data(fw, a.fn, 3, "wxyz", 4, 4);
    ava_wtest_wt_notify_data_reply r{};
    r.ret = WT_OK;
    fw.reply(call, &r, sizeof r);
    serve_call<ava_wtest_wt_get_tag_reply>(fw, AVA_WTEST_FN_WT_GET_TAG, 12);
    fw.wait_goodbye();
  });
  StderrCapture err;
  int user = 0;
  cr_assert_eq(wt_notify_data(obj(9), "wxyz", 4, on_data, &user), WT_OK);
  cr_expect_eq(wt_get_tag(), 12, "the guest no longer works after the lie");
  ava_guest_shutdown(spec());
  w.join();
  const std::string log = err.finish();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  cr_expect_eq(short_status.load(), AVA_E_PROTO);
  cr_expect_eq(long_status.load(), AVA_E_PROTO);
  cr_expect_eq(good_status.load(), AVA_OK);
  cr_expect_eq(guest_fake::count_of(log, "a buffer does not hold the bytes its size argument says"),
               2, "%s", log.c_str());
  std::lock_guard lock(g_data.mu);
  cr_expect_eq(g_data.calls, 1, "only the truthful callback runs");
  cr_expect_eq(g_data.size, 4u);
  cr_expect_str_eq(g_data.bytes.c_str(), "wxyz");
}
