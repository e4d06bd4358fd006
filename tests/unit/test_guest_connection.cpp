// SPDX-License-Identifier: MIT
// The life of a guest library's connection: lazy connection with HELLO,
// failures reported once (no worker, refused, spec mismatch), concurrent
// first calls, init/fini hooks, shutdown in every state, and fork().
#include <criterion/criterion.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test_guest_support.hpp"

using gtest_fake::count_of;
using gtest_fake::FakeWorker;
using gtest_fake::Seen;
using gtest_fake::StderrCapture;
using namespace gtest_spec;

namespace {

void serve_versions(FakeWorker &w, int n, int32_t ret = 3) {
  for (int i = 0; i < n; ++i) {
    Seen call;
    if (!w.expect(AVA_MSG_CALL, &call)) {
      return;
    }
    StatusReply r = {ret, 0};
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
    cr_expect_eq(t_version(), kErr);
  }
  ava_guest_shutdown(&kSpec);
  std::string log = err.finish();
  cr_expect_eq(log,
               "ava: no worker configured for spec 'gtest': set AVA_WORKER, or 'worker' in "
               "/etc/ava/guest.toml, or run the program with `ava run`, or load ava.ko in a VM\n",
               "got:\n%s", log.c_str());
}

Test(guest_connection, unreachable_worker_is_reported_once) {
  FakeWorker w;
  w.configure_guest(10000, 50);
  std::string missing = w.config_path() + ".nothing-here";
  setenv("AVA_WORKER", ("unix:" + missing).c_str(), 1);
  StderrCapture err;
  cr_expect_eq(t_version(), kErr);
  cr_expect_eq(t_version(), kErr, "no new attempt right away");
  ava_guest_shutdown(&kSpec);
  std::string log = err.finish();
  cr_expect_eq(count_of(log, "\n"), 1, "got:\n%s", log.c_str());
  cr_expect(log.find("ava: cannot connect to the gtest worker at unix:" + missing) == 0, "got:\n%s",
            log.c_str());
}

Test(guest_connection, spec_mismatch_is_explained) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &) {}, AVA_E_SPEC);
  StderrCapture err;
  cr_expect_eq(t_version(), kErr);
  cr_expect_eq(t_version(), kErr);
  w.join();
  ava_guest_shutdown(&kSpec);
  std::string log = err.finish();
  cr_expect_eq(count_of(log, "\n"), 1, "got:\n%s", log.c_str());
  cr_expect(log.find("worker and guest library were generated from different specs") !=
                std::string::npos,
            "got:\n%s", log.c_str());
  cr_expect(log.find("guest spec 'gtest', id 77, hash 0x000000001234abcd") != std::string::npos,
            "got:\n%s", log.c_str());
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
      StatusReply r = {static_cast<int32_t>(call.hdr.thread_id), 0};
      fw.reply(call, &r, sizeof r);
    }
    fw.wait_goodbye();
  });
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&wrong] {
      for (int i = 0; i < kCallsEach; ++i) {
        if (t_version() != static_cast<int32_t>(gettid())) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread &t : threads) {
    t.join();
  }
  ava_guest_shutdown(&kSpec);
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
const ava_guest_spec *g_hook_spec = nullptr;

int32_t hooked_version() {
  struct ava_call c;
  const void *rp;
  int32_t ret = kErr;
  if (ava_call_begin(&c, g_hook_spec, kVersion, AVA_F_SYNC) == 0 &&
      ava_call_invoke(&c, nullptr, 0, &rp, sizeof(StatusReply)) == 0) {
    ret = static_cast<const StatusReply *>(rp)->ret;
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
  g_events.push_back("fini_prologue " + std::to_string(hooked_version()));
}
void fini_epilogue() {
  g_events.push_back("fini_epilogue");
}

const ava_guest_spec kHookSpec = {
    "gtest",       77,
    0x1234abcdull, kNumFuncs,
    kFuncNames,    callback_dispatch,
    init_prologue, init_epilogue,
    fini_prologue, fini_epilogue,
};

} // namespace

Test(guest_connection, init_and_fini_hooks) {
  g_hook_spec = &kHookSpec;
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    serve_versions(fw, 3, 5); // two calls, then one from fini_prologue
    if (!fw.wait_goodbye()) {
      fw.fail("no GOODBYE");
    }
  });
  cr_expect_eq(hooked_version(), 5);
  cr_expect_eq(hooked_version(), 5);
  ava_guest_shutdown(&kHookSpec);
  ava_guest_shutdown(&kHookSpec);
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());
  std::vector<std::string> expected = {"init_prologue", "init_epilogue", "fini_prologue 5",
                                       "fini_epilogue"};
  cr_expect(g_events == expected, "hooks ran %zu times, in a wrong order", g_events.size());
}

Test(guest_connection, shutdown_in_every_state) {
  StderrCapture err;
  ava_guest_shutdown(&kSpec); // never connected
  ava_guest_shutdown(&kSpec); // twice
  ava_guest_shutdown(nullptr);
  cr_expect_eq(t_version(), kErr, "no connection is made after shutdown");
  cr_expect_eq(t_version(), kErr);
  std::string log = err.finish();
  cr_expect_eq(log, "ava: t_version called after the gtest guest library was shut down\n",
               "got:\n%s", log.c_str());
}

Test(guest_connection, unsupported_is_reported_once_per_function) {
  StderrCapture err;
  cr_expect_eq(t_unsupported(), kErr);
  cr_expect_eq(t_unsupported(), kErr);
  ava_guest_unsupported(&kSpec, "t_other");
  std::string log = err.finish();
  cr_expect_eq(log,
               "ava: t_unsupported is not supported by this spec\n"
               "ava: t_other is not supported by this spec\n",
               "got:\n%s", log.c_str());
}

// A fork child leaves the inherited connection alone (no GOODBYE on it) and
// connects afresh; the parent keeps using its own.
Test(guest_connection, fork_child_connects_afresh) {
  FakeWorker w;
  w.configure_guest();
  w.start([](FakeWorker &fw) {
    serve_versions(fw, 1, 1);
    auto parent = fw.take_channel();
    if (!fw.accept_guest() || !fw.handshake(AVA_OK)) {
      return;
    }
    serve_versions(fw, 1, 2);
    if (!fw.wait_goodbye()) {
      fw.fail("the child did not say goodbye on its own connection");
    }
    fw.set_channel(std::move(parent));
    serve_versions(fw, 1, 3);
    if (!fw.wait_goodbye()) {
      fw.fail("the parent's connection did not survive the child");
    }
  });
  cr_assert_eq(t_version(), 1);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    int32_t ret = t_version();
    ava_guest_shutdown(&kSpec);
    _exit(ret == 2 ? 0 : 1);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's call failed");
  cr_expect_eq(t_version(), 3);
  ava_guest_shutdown(&kSpec);
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
