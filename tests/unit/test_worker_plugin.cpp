// SPDX-License-Identifier: MIT
// Plugins loaded with dlopen (resolving the runtime from this executable, as
// under `ava worker`), and run_worker as a whole process: ready fd, serving,
// exit when idle, orderly stop on SIGTERM.
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "worker/server.hpp"
#include "worker/testing/fake_guest.hpp"

using namespace ava;
using namespace ava::testing;

namespace {

const char *const kPluginDir = AVA_WT_PLUGIN_DIR;

uint64_t plugin_counter(const char *symbol) {
  std::string path = std::string(kPluginDir) + "/libava_worker_wtest.so";
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(handle, "plugin not loaded");
  auto fn = reinterpret_cast<uint64_t (*)()>(::dlsym(handle, symbol));
  cr_assert_not_null(fn);
  uint64_t value = fn();
  ::dlclose(handle);
  return value;
}

int dummy_dispatch(ava_wcall *, uint32_t) {
  return AVA_OK;
}

} // namespace

Test(worker_plugin, loads_once_and_caches) {
  PluginSet plugins(kPluginDir);
  const ava_worker_spec *spec = nullptr;
  Status s = plugins.find("wtest", &spec);
  cr_assert(s.is_ok(), "%s", s.message.c_str());
  cr_assert_not_null(spec);
  cr_expect_str_eq(spec->name, "wtest");
  cr_expect_eq(spec->id, AVA_WTEST_SPEC_ID);
  cr_expect_eq(spec->hash, AVA_WTEST_SPEC_HASH);
  cr_expect_eq(spec->nfuncs, AVA_WTEST_NFUNCS);
  const ava_worker_spec *again = nullptr;
  cr_assert(plugins.find("wtest", &again).is_ok());
  cr_expect_eq(again, spec);
  cr_expect_eq(plugin_counter("wt_lib_init_count"), 1u, "init_epilogue once per process");
}

Test(worker_plugin, refuses_unknown_or_unsafe_names) {
  PluginSet plugins(kPluginDir);
  const char *const names[] = {"nosuch",   "../worker-test/libava_worker_wtest", "", "a/b",
                               "wtest.so", "0123456789012345678901234567890123"};
  for (const char *name : names) {
    const ava_worker_spec *spec = nullptr;
    Status s = plugins.find(name, &spec);
    cr_expect_eq(s.code, AVA_E_SPEC, "'%s'", name);
    cr_expect_null(spec);
    cr_expect_not(s.message.empty());
  }
  PluginSet restricted(kPluginDir, {"demo"});
  const ava_worker_spec *spec = nullptr;
  cr_expect_eq(restricted.find("wtest", &spec).code, AVA_E_SPEC);
}

Test(worker_plugin, validates_spec_tables) {
  // SYNC | ASYNC: a function the guest sends either way (conditionally async).
  const uint32_t good_flags[] = {AVA_F_SYNC, AVA_F_ASYNC | AVA_F_FLUSH, 0,
                                 AVA_F_SYNC | AVA_F_ASYNC};
  const uint32_t bad_flags[] = {AVA_F_FLUSH};
  const uint32_t unknown_flags[] = {AVA_F_SYNC | 0x80};
  ava_worker_spec good{};
  good.name = "ok";
  good.nfuncs = 4;
  good.func_flags = good_flags;
  good.dispatch = dummy_dispatch;
  cr_expect(PluginSet::validate(&good).is_ok());
  cr_expect_eq(PluginSet::validate(nullptr).code, AVA_E_SPEC);
  ava_worker_spec bad = good;
  bad.name = nullptr;
  cr_expect_eq(PluginSet::validate(&bad).code, AVA_E_SPEC);
  bad = good;
  bad.dispatch = nullptr;
  cr_expect_eq(PluginSet::validate(&bad).code, AVA_E_SPEC);
  bad = good;
  bad.func_flags = nullptr;
  cr_expect_eq(PluginSet::validate(&bad).code, AVA_E_SPEC);
  bad = good;
  bad.nfuncs = 1;
  bad.func_flags = bad_flags;
  cr_expect_eq(PluginSet::validate(&bad).code, AVA_E_SPEC);
  bad.func_flags = unknown_flags;
  cr_expect_eq(PluginSet::validate(&bad).code, AVA_E_SPEC);
}

Test(worker_plugin, serves_a_guest_through_the_plugin, .timeout = 60) {
  WorkerOptions options;
  options.plugin_dir = kPluginDir;
  WorkerHarness harness(options);
  auto guest = harness.connect();
  cr_assert(guest != nullptr);
  cr_assert_eq(guest->hello(), AVA_OK);
  uint64_t obj = guest->create_obj(16);
  cr_expect_neq(obj, 0u);
  cr_expect_eq(guest->add(40, 2), 42);
  guest->close();
  cr_expect(harness.finish(0).is_ok());
  cr_expect_eq(plugin_counter("wt_lib_live_objects"), 0u);
}

Test(worker_plugin, run_worker_fails_cleanly_without_its_plugin) {
  WorkerOptions options;
  options.plugin_dir = kPluginDir;
  options.specs = {"nosuch"};
  options.listen.path = "@ava-wtest-unused";
  cr_expect_eq(run_worker(options), 1);
}

namespace {

struct Child {
  pid_t pid = -1;
  std::string address;
};

// Starts run_worker in a child process and reads its address from the ready fd.
Child start_worker(bool exit_when_idle) {
  int fds[2];
  cr_assert_eq(::pipe(fds), 0);
  Child child;
  child.pid = ::fork();
  cr_assert_geq(child.pid, 0);
  if (child.pid == 0) {
    ::close(fds[0]);
    WorkerOptions options;
    options.plugin_dir = kPluginDir;
    options.specs = {"wtest"};
    options.listen.path = "@ava-wtest-worker-" + std::to_string(::getpid());
    options.ready_fd = fds[1];
    options.exit_when_idle = exit_when_idle;
    ::_exit(run_worker(options));
  }
  ::close(fds[1]);
  char buf[256];
  size_t got = 0;
  while (got < sizeof buf) {
    struct pollfd p = {fds[0], POLLIN, 0};
    if (::poll(&p, 1, kWaitMs) <= 0)
      break;
    ssize_t n = ::read(fds[0], buf + got, sizeof buf - got);
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  ::close(fds[0]);
  child.address.assign(buf, got);
  return child;
}

// Waits (bounded) for the child; its exit status, or -1.
int wait_worker(pid_t pid) {
  for (int i = 0; i < kWaitMs / 10; ++i) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    ::poll(nullptr, 0, 10);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

std::unique_ptr<FakeGuest> connect_to(const std::string &line) {
  cr_assert(!line.empty() && line.back() == '\n', "ready fd said '%s'", line.c_str());
  Address address;
  cr_assert(parse_address(line.substr(0, line.size() - 1), ChannelKind::Unix, &address).is_ok());
  std::unique_ptr<Channel> channel;
  cr_assert(connect_channel(address, kWaitMs, &channel).is_ok());
  return std::make_unique<FakeGuest>(std::move(channel));
}

} // namespace

Test(worker_plugin, run_worker_exits_when_idle, .timeout = 60) {
  Child child = start_worker(true);
  auto guest = connect_to(child.address);
  cr_assert_eq(guest->hello(), AVA_OK);
  cr_expect_neq(guest->create_obj(8), 0u);
  cr_expect_eq(guest->add(1, 2), 3);
  guest->goodbye();
  cr_expect_eq(wait_worker(child.pid), 0);
}

Test(worker_plugin, run_worker_stops_on_sigterm, .timeout = 60) {
  Child child = start_worker(false);
  auto first = connect_to(child.address);
  cr_assert_eq(first->hello(), AVA_OK);
  first->goodbye(); // not the last word: the worker keeps running
  auto guest = connect_to(child.address);
  cr_assert_eq(guest->hello(), AVA_OK);
  cr_expect_neq(guest->create_obj(8), 0u);
  cr_assert_eq(::kill(child.pid, SIGTERM), 0);
  Received reply;
  cr_expect_eq(guest->recv(&reply).code, AVA_E_CLOSED);
  cr_expect_eq(wait_worker(child.pid), 0);
}
