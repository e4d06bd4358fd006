// SPDX-License-Identifier: MIT
// The life of a guest library's connection: lazy connection with HELLO,
// failures reported once (no worker, refused, spec mismatch), concurrent
// first calls, init/fini hooks, shutdown in every state, fork(), and the
// call object each thread keeps for reuse (nested calls, after shutdown).
#include <criterion/criterion.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test_guest_support.hpp"

using guest_fake::count_of;
using guest_fake::FakeWorker;
using guest_fake::Seen;
using guest_fake::StderrCapture;
using namespace wtest_guest;

namespace {

// Answers n calls of wt_get_tag with ret.
void serve_tags(FakeWorker &w, int n, int32_t ret = 3) {
  for (int i = 0; i < n; ++i) {
    Seen call;
    if (!w.expect(AVA_MSG_CALL, &call)) {
      return;
    }
    if (call.hdr.func_id != AVA_WTEST_FN_WT_GET_TAG) {
      w.fail("expected wt_get_tag");
    }
    ava_wtest_wt_get_tag_reply r{};
    r.ret = ret;
    w.reply(call, &r, sizeof r);
  }
}

} // namespace

Test(guest_connection, no_worker_configured_is_reported_once) {
  FakeWorker w; // only for its config file
  w.configure_guest();
  unsetenv("AVA_WORKER");
  StderrCapture err;
  for (int i = 0; i < 3; ++i) {
    cr_expect_eq(wt_get_tag(), kErr);
  }
  ava_guest_shutdown(spec());
  std::string log = err.finish();
  cr_expect_eq(log,
               "ava: no worker configured for spec 'wtest': set AVA_WORKER, or 'worker' in "
               "/etc/ava/guest.toml, or run the program with `ava run`, or load ava.ko in a VM\n",
               "got:\n%s", log.c_str());
}

Test(guest_connection, unreachable_worker_is_reported_once) {
  FakeWorker w;
  w.configure_guest(10000, 50);
  std::string missing = w.config_path() + ".nothing-here";
  setenv("AVA_WORKER", ("unix:" + missing).c_str(), 1);
  StderrCapture err;
  cr_expect_eq(wt_get_tag(), kErr);
  cr_expect_eq(wt_get_tag(), kErr, "no new attempt right away");
  ava_guest_shutdown(spec());
  std::string log = err.finish();
  cr_expect_eq(count_of(log, "\n"), 1, "got:\n%s", log.c_str());
  cr_expect(log.find("ava: cannot connect to the wtest worker at unix:" + missing) == 0, "got:\n%s",
            log.c_str());
}

Test(guest_connection, spec_mismatch_is_explained) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &) {}, AVA_E_SPEC);
  StderrCapture err;
  cr_expect_eq(wt_get_tag(), kErr);
  cr_expect_eq(wt_get_tag(), kErr);
  w.join();
  ava_guest_shutdown(spec());
  std::string log = err.finish();
  cr_expect_eq(count_of(log, "\n"), 1, "got:\n%s", log.c_str());
  cr_expect(log.find("worker and guest library were generated from different specs") !=
                std::string::npos,
            "got:\n%s", log.c_str());
  char identity[96];
  std::snprintf(identity, sizeof identity, "guest spec 'wtest', id %u, hash 0x%016llx",
                AVA_WTEST_SPEC_ID, static_cast<unsigned long long>(AVA_WTEST_SPEC_HASH));
  cr_expect(log.find(identity) != std::string::npos, "got:\n%s", log.c_str());
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}

// Threads racing for the first call share one connection and each gets its
// own reply.
Test(guest_connection, concurrent_first_calls_share_one_connection) {
  constexpr int kThreads = 8;
  constexpr int kCallsEach = 50;
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    for (int i = 0; i < kThreads * kCallsEach; ++i) {
      Seen call;
      if (!fw.expect(AVA_MSG_CALL, &call)) {
        return;
      }
      // Echo the caller's thread id back so each caller can check it got its reply.
      ava_wtest_wt_get_tag_reply r{};
      r.ret = static_cast<int32_t>(call.hdr.thread_id);
      fw.reply(call, &r, sizeof r);
    }
    fw.wait_goodbye();
  });
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&wrong] {
      for (int i = 0; i < kCallsEach; ++i) {
        if (wt_get_tag() != static_cast<int32_t>(gettid())) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread &t : threads) {
    t.join();
  }
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(wrong.load(), 0);
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  std::vector<Seen> seen = w.seen();
  int hellos = 0;
  for (const Seen &s : seen) {
    hellos += s.hdr.kind == AVA_MSG_HELLO;
  }
  cr_expect_eq(hellos, 1);
}

namespace {

std::vector<std::string> g_events;
ava_guest_spec g_hook_spec;

// wt_get_tag's call, made through g_hook_spec's runtime.
int32_t hooked_tag() {
  struct ava_call c;
  const void *rp;
  int32_t ret = kErr;
  ava_wtest_wt_get_tag_call a{};
  if (ava_call_begin(&c, &g_hook_spec, AVA_WTEST_FN_WT_GET_TAG, AVA_F_SYNC) == 0 &&
      ava_call_invoke(&c, &a, sizeof a, &rp, sizeof(ava_wtest_wt_get_tag_reply)) == 0) {
    ret = static_cast<int32_t>(static_cast<const ava_wtest_wt_get_tag_reply *>(rp)->ret);
  }
  ava_call_end(&c);
  return ret;
}

void init_prologue() {
  g_events.push_back("init_prologue");
}
void init_epilogue() {
  g_events.push_back("init_epilogue");
}
void fini_prologue() {
  // The connection is still up: a spec may release its objects here.
  g_events.push_back("fini_prologue " + std::to_string(hooked_tag()));
}
void fini_epilogue() {
  g_events.push_back("fini_epilogue");
}

} // namespace

// The runtime's order of the four hooks, run on the generated spec's tables
// with hooks of this test (the wtest spec has only a worker-side one).
Test(guest_connection, init_and_fini_hooks) {
  g_hook_spec = *spec();
  g_hook_spec.init_prologue = init_prologue;
  g_hook_spec.init_epilogue = init_epilogue;
  g_hook_spec.fini_prologue = fini_prologue;
  g_hook_spec.fini_epilogue = fini_epilogue;
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    serve_tags(fw, 3, 5); // two calls, then one from fini_prologue
    if (!fw.wait_goodbye()) {
      fw.fail("no GOODBYE");
    }
  });
  cr_expect_eq(hooked_tag(), 5);
  cr_expect_eq(hooked_tag(), 5);
  ava_guest_shutdown(&g_hook_spec);
  ava_guest_shutdown(&g_hook_spec);
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  std::vector<std::string> expected = {"init_prologue", "init_epilogue", "fini_prologue 5",
                                       "fini_epilogue"};
  cr_expect(g_events == expected, "hooks ran %zu times, in a wrong order", g_events.size());
}

Test(guest_connection, shutdown_in_every_state) {
  StderrCapture err;
  ava_guest_shutdown(spec()); // never connected
  ava_guest_shutdown(spec()); // twice
  ava_guest_shutdown(nullptr);
  cr_expect_eq(wt_get_tag(), kErr, "no connection is made after shutdown");
  cr_expect_eq(wt_get_tag(), kErr);
  std::string log = err.finish();
  cr_expect_eq(log, "ava: wt_get_tag called after the wtest guest library was shut down\n",
               "got:\n%s", log.c_str());
}

Test(guest_connection, unsupported_is_reported_once_per_function) {
  StderrCapture err;
  cr_expect_eq(wt_unsupported(0), kErr);
  cr_expect_eq(wt_unsupported(1), kErr);
  ava_guest_unsupported(spec(), "wt_other");
  std::string log = err.finish();
  cr_expect_eq(log,
               "ava: wt_unsupported is not supported by this spec\n"
               "ava: wt_other is not supported by this spec\n",
               "got:\n%s", log.c_str());
}

// A fork child leaves the inherited connection alone (no GOODBYE on it) and
// connects afresh; the parent keeps using its own.
Test(guest_connection, fork_child_connects_afresh) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    serve_tags(fw, 1, 1);
    auto parent = fw.take_channel();
    if (!fw.accept_guest() || !fw.handshake(AVA_OK)) {
      return;
    }
    serve_tags(fw, 1, 2);
    if (!fw.wait_goodbye()) {
      fw.fail("the child did not say goodbye on its own connection");
    }
    fw.set_channel(std::move(parent));
    serve_tags(fw, 1, 3);
    if (!fw.wait_goodbye()) {
      fw.fail("the parent's connection did not survive the child");
    }
  });
  cr_assert_eq(wt_get_tag(), 1);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    int32_t ret = wt_get_tag();
    ava_guest_shutdown(spec());
    _exit(ret == 2 ? 0 : 1);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's call failed");
  cr_expect_eq(wt_get_tag(), 3);
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  std::vector<Seen> seen = w.seen();
  std::vector<uint64_t> pids;
  for (const Seen &s : seen) {
    if (s.hdr.kind == AVA_MSG_HELLO) {
      ava_hello h;
      std::memcpy(&h, s.args(), sizeof h);
      pids.push_back(h.pid);
    }
  }
  cr_assert_eq(pids.size(), 2u);
  cr_expect_eq(pids[0], static_cast<uint64_t>(getpid()));
  cr_expect_eq(pids[1], static_cast<uint64_t>(pid));
}

namespace {

// Starts wt_get_tag's call on spec()'s runtime; the caller invokes and ends it.
bool begin_tag_call(struct ava_call *c) {
  return ava_call_begin(c, spec(), AVA_WTEST_FN_WT_GET_TAG, AVA_F_SYNC) == 0;
}

int32_t finish_tag_call(struct ava_call *c) {
  const void *rp = nullptr;
  ava_wtest_wt_get_tag_call a{};
  int32_t ret = kErr;
  if (ava_call_invoke(c, &a, sizeof a, &rp, sizeof(ava_wtest_wt_get_tag_reply)) == 0)
    ret = static_cast<int32_t>(static_cast<const ava_wtest_wt_get_tag_reply *>(rp)->ret);
  ava_call_end(c);
  return ret;
}

} // namespace

// A thread keeps its call object between calls (shim/call_pool.hpp); a call
// begun while another is open on the same thread (a spec helper calling the
// API) must get its own, and each its own reply, in any order of ending.
Test(guest_connection, a_call_inside_a_call_gets_its_own) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    for (int32_t ret = 1; ret <= 4; ++ret)
      serve_tags(fw, 1, ret);
    fw.wait_goodbye();
  });
  cr_assert_eq(wt_get_tag(), 1); // the thread's pooled call exists now
  struct ava_call outer, inner;
  cr_assert(begin_tag_call(&outer));
  cr_assert(begin_tag_call(&inner));
  cr_expect_neq(outer.impl, inner.impl);
  cr_expect_eq(finish_tag_call(&inner), 2);
  cr_expect_eq(finish_tag_call(&outer), 3);
  cr_expect_eq(wt_get_tag(), 4); // and the pooled one is free again
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
}

// The pooled call still names the connection of the runtime's last
// generation: after shutdown it must not be used, and the call fails as any
// call after shutdown does, without reaching the closed connection.
Test(guest_connection, a_kept_call_is_not_reused_after_shutdown) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    serve_tags(fw, 1, 7);
    if (!fw.wait_goodbye())
      fw.fail("no GOODBYE");
  });
  cr_assert_eq(wt_get_tag(), 7);
  ava_guest_shutdown(spec());
  w.join();
  StderrCapture err;
  cr_expect_eq(wt_get_tag(), kErr);
  std::string log = err.finish();
  cr_expect_eq(log, "ava: wt_get_tag called after the wtest guest library was shut down\n",
               "got:\n%s", log.c_str());
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  int calls = 0;
  for (const Seen &s : w.seen())
    calls += s.hdr.kind == AVA_MSG_CALL;
  cr_expect_eq(calls, 1);
}
