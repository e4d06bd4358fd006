// SPDX-License-Identifier: MIT
// Kernel-mode calls over the netlink carrier (include/ava/knetlink.h): a
// guest with no ivshmem device runs `ava worker --netlink --spec demo`
// itself, and the test module ava_demo_test.ko calls the demo API through
// ava_demo.ko and ava.ko's netlink connection to that worker. One boot, all
// in the guest: the module's own checks pass (its PASS line, 2 MiB buffers
// through 256 KiB halves of the shared area, in pieces, included); a second worker is refused;
// after `rmmod ava_demo_test ava_demo` the worker's session has ended; a call in flight when the
// worker is killed fails with the API's error value well before it would have ended; without a
// worker ava_demo.ko does not load; a hostile worker (guest/knl_probe.c) gets its malformed
// messages and mappings refused and its call failed; a new worker registers, a caller killed
// mid-call gets its error and the module unloads; and ava.ko unloads at the end.
#include <criterion/criterion.h>

#include <string>

#include "vm_checks.hpp"
#include "vm_session.hpp"

namespace {

using vmtest::check_result;
using vmtest::expect_ok;

constexpr const char *kModDir = "/lib/modules/ava-vm/";
// The faulted call would sleep this long; it must fail within kErrorWithinS.
constexpr int kFaultSleepMs = 50000;
constexpr int kErrorWithinS = 30;

// Sessions the worker started and ended so far (its log lines) must match.
// Single-quoted in the job: no single quotes inside.
constexpr const char *kSessionsClosed =
    "s=$(grep -c \"session started\" worker.log); e=$(grep -c \"session ended\" worker.log); "
    "echo \"started $s ended $e\"; [ \"$s\" -ge 1 ] && [ \"$s\" = \"$e\" ]";

std::string netlink_job() {
  const std::string dir = kModDir;
  const std::string worker =
      sh_quote(AVA_BIN) + " worker --netlink --spec demo --plugin-dir " + sh_quote(AVA_PLUGIN_DIR);
  // Halves of 256 KiB: the test module's 2 MiB buffers cross them in pieces, both ways.
  std::string job = "insmod " + dir + "ava.ko knl_shm_kb=256 || echo 'ava.ko did not load'\n";
  job += worker + " --ready-fd 3 3>worker.ready 2>worker.log &\n";
  job += "echo $! >worker.pid\n";
  job += "ava_wait_for 300 test -s worker.ready\n";
  job += "ava_check ready 5 cat worker.ready\n";
  job += "ava_check second 30 " + worker + "\n";
  job += "ava_check load.demo 120 insmod " + dir + "ava_demo.ko\n";
  job += "ava_check load.test 600 insmod " + dir + "ava_demo_test.ko\n";
  job += "ava_check rmmod.busy 30 rmmod ava\n";
  job += "ava_check unload 120 rmmod ava_demo_test ava_demo\n";
  job += "ava_wait_for 300 sh -c '" + std::string(kSessionsClosed) + "' >/dev/null\n";
  job += "ava_check sessions 10 sh -c '" + std::string(kSessionsClosed) + "'\n";
  // the worker dies under a call in flight
  job += "ava_check load.demo.wkill 120 insmod " + dir + "ava_demo.ko\n";
  job += "ava_start fault.wkill " + std::to_string(kErrorWithinS) + " insmod " + dir +
         "ava_demo_test.ko fault_sleep_ms=" + std::to_string(kFaultSleepMs) + "\n";
  job += "ava_wait_for 600 sh -c '[ $(dmesg | grep -c \"fault: calling\") -ge 1 ]'\n";
  job += "sleep 1\nkill -9 $(cat worker.pid)\n";
  job += "ava_finish fault.wkill\n";
  job += "ava_check unload.wkill 120 rmmod ava_demo_test ava_demo\n";
  job += "wait $(cat worker.pid)\n";
  job += "ava_check load.noworker 60 insmod " + dir + "ava_demo.ko\n";
  job += "ava_check worker.log 5 cat worker.log\n";
  // a hostile worker: ava.ko refuses its malformed answers and fails the call
  job += "ava_start probe 120 " + sh_quote(KNL_PROBE) + " probe.ready\n";
  job += "ava_wait_for 300 test -s probe.ready\n";
  job += "ava_check load.demo.probe 120 insmod " + dir + "ava_demo.ko\n";
  job += "ava_check fault.probe " + std::to_string(kErrorWithinS) + " insmod " + dir +
         "ava_demo_test.ko fault_sleep_ms=" + std::to_string(kFaultSleepMs) + "\n";
  job += "ava_finish probe\n";
  job += "ava_check unload.probe 120 rmmod ava_demo_test ava_demo\n";
  // a new worker registers after the first died; the caller is killed mid-call
  job += worker + " --ready-fd 3 3>worker2.ready 2>worker2.log &\n";
  job += "echo $! >worker2.pid\n";
  job += "ava_wait_for 300 test -s worker2.ready\n";
  job += "ava_check load.demo.gkill 120 insmod " + dir + "ava_demo.ko\n";
  job += "ava_start fault.gkill " + std::to_string(kErrorWithinS) + " insmod " + dir +
         "ava_demo_test.ko fault_sleep_ms=" + std::to_string(kFaultSleepMs) + "\n";
  job += "ava_wait_for 600 sh -c '[ $(dmesg | grep -c \"fault: calling\") -ge 3 ]'\n";
  job += "sleep 1\nkill -9 $(cat fault.gkill.pid)\n";
  job += "ava_finish fault.gkill\n";
  job += "ava_check unload.gkill 120 rmmod ava_demo_test ava_demo\n";
  // its session still sleeps in the abandoned call: end it the hard way
  job += "kill -9 $(cat worker2.pid)\nwait $(cat worker2.pid)\n";
  job += "ava_check rmmod.idle 30 rmmod ava\n";
  return job;
}

void expect_fails(const VmResults &r, const char *name) {
  if (const VmCheck *c = check_result(r, name))
    cr_expect(c->rc != 0 && c->rc != 124, "[%s] exit %d, want a failure (not a timeout)", name,
              c->rc);
}

} // namespace

Test(vm_kernel_netlink, demo_from_kernel_space_to_a_guest_worker, .timeout = 1200) {
  vmtest::require_vm();
  auto env = vm_image_env();
  cr_assert(env["AVA_VM_HAVE_KMOD"] == "1", "the guest image has no ava.ko (see vm_image)");
  cr_assert(vmtest::image_modules(env).count("ava_demo_test") != 0,
            "the guest image lacks ava_demo_test.ko (AVA_VM_EXTRA_KO=%s): build the "
            "vm_kernel_modules target before the vm_image test",
            env["AVA_VM_EXTRA_KO"].c_str());
  // no --ivshmem: the only carrier is netlink
  VmSession vm("kernel-netlink", netlink_job());
  const int rc = vm.wait();
  const VmResults r = vm.results();

  expect_ok(r, "ready");
  if (const VmCheck *c = check_result(r, "ready"))
    cr_expect(c->out.find("netlink:ava_call") != std::string::npos, "[ready] said '%s'",
              c->out.c_str());
  expect_fails(r, "second");
  if (const VmCheck *c = check_result(r, "second"))
    cr_expect(c->err.find("refused") != std::string::npos,
              "[second] a second worker was not refused by ava.ko:\n%s", c->err.c_str());
  expect_ok(r, "load.demo");
  expect_ok(r, "load.test");
  expect_fails(r, "rmmod.busy");
  expect_ok(r, "unload");
  expect_ok(r, "sessions");
  expect_ok(r, "load.demo.wkill");
  // returned (not 124, its time limit) after the call failed
  if (const VmCheck *c = check_result(r, "fault.wkill"))
    cr_expect_eq(c->rc, 0, "[fault.wkill] insmod exit %d (limit %d s)", c->rc, kErrorWithinS);
  expect_ok(r, "unload.wkill");
  expect_fails(r, "load.noworker");
  expect_ok(r, "load.demo.probe");
  expect_ok(r, "fault.probe");
  expect_ok(r, "probe");
  expect_ok(r, "unload.probe");
  expect_ok(r, "load.demo.gkill");
  // the killed insmod dies of SIGKILL, not of its time limit
  if (const VmCheck *c = check_result(r, "fault.gkill"))
    cr_expect_eq(c->rc, 128 + 9, "[fault.gkill] insmod exit %d", c->rc);
  expect_ok(r, "unload.gkill");
  expect_ok(r, "rmmod.idle");

  const std::string klog = vm.kernel_log();
  cr_expect(klog.find("ava_demo_test: PASS ") != std::string::npos &&
                klog.find("ava_demo_test: FAIL") == std::string::npos,
            "the test module did not pass (logs in %s):\n%s", vm.dir().c_str(), klog.c_str());
  cr_expect(klog.find("ava_demo_test: exit: released the kept object (0)") != std::string::npos,
            "the test module did not release its object at exit");
  // DEMO_ERR_TRANSPORT (-5): the call could not complete
  size_t faulted = 0;
  for (size_t at = klog.find("ava_demo_test: fault: sleep_ms = -5,"); at != std::string::npos;
       at = klog.find("ava_demo_test: fault: sleep_ms = -5,", at + 1))
    ++faulted;
  cr_expect_eq(faulted, 3u, "the faulted calls did not all fail with DEMO_ERR_TRANSPORT:\n%s",
               klog.c_str());
  vmtest::expect_clean_run(vm, rc);
}
